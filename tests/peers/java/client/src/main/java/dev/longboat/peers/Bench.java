package dev.longboat.peers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The load generator of the side-by-side benchmark (bench/rocketmq_compare.py): the same
 * RocketMQ 4.9.8 Java client against either broker, so the broker is the only variable. Each
 * case prints one "figures" event; client settings are the client's defaults except where said.
 *
 * --cases, comma-separated, run in turn:
 * single (--single N sync sends of --body-size bytes by one producer, after 20 unmeasured),
 * batch (--batches N batches of 64 messages, --in-flight threads each sending one batch
 * synchronously at a time), drain (--drain N messages produced in batches, then a push
 * consumer of a new group, from the first offset, times the first to the N-th delivery),
 * wakeup (--rounds N: a push consumer parked on an empty topic; one sync send every 20 ms,
 * timed from before send() to the listener, both in this JVM), firstsend (sync sends every
 * 20 ms until one is accepted; prints the wall clock of that moment, "acceptedAtMs", for a
 * broker's cold start measured from outside), fanout (--drain N messages produced, then
 * --groups G push consumers of G new groups drain them all at once: G x N deliveries timed
 * from the first), syncsend (--single N sync sends of one message, shared by --producers P
 * threads: the SYNC_FLUSH row).
 */
public final class Bench {
    private static final String USAGE = "Bench --namesrv HOST:PORT --cases single,batch,drain,"
            + "wakeup,firstsend,fanout,syncsend [--topic-prefix P] [--single N] [--batches N]"
            + " [--in-flight K] [--drain N] [--groups G] [--producers P] [--rounds N]"
            + " [--body-size B] [--timeout-ms MS]";
    private static final int BATCH = 64;
    private static final long PACE_MS = 20;

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String prefix = peer.get("topic-prefix", "bench");
        byte[] body = new byte[(int) peer.number("body-size", 256)];
        Arrays.fill(body, (byte) 'x');
        DefaultMQProducer producer = new DefaultMQProducer("bench-producer");
        producer.setNamesrvAddr(peer.require("namesrv"));
        producer.setInstanceName("bench-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(10000);
        producer.start();
        Peer.emit("started");
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(peer.millisLeft());
                Peer.timeout("bench");
            } catch (InterruptedException e) {
                // done in time
            }
        });
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            for (String name : Peer.split(peer.require("cases"))) {
                String topic = prefix + "-" + name;
                switch (name) {
                    case "single":
                        single(producer, topic, body, (int) peer.number("single", 2000));
                        break;
                    case "batch":
                        batch(producer, topic, body, (int) peer.number("batches", 500),
                                (int) peer.number("in-flight", 4), "batch");
                        break;
                    case "drain":
                        drain(peer, producer, topic, body, (int) peer.number("drain", 200000));
                        break;
                    case "wakeup":
                        wakeup(peer, producer, topic, body, (int) peer.number("rounds", 500));
                        break;
                    case "firstsend":
                        firstSend(producer, topic, body);
                        break;
                    case "fanout":
                        fanout(peer, producer, topic, body, (int) peer.number("drain", 200000),
                                (int) peer.number("groups", 4));
                        break;
                    case "syncsend":
                        syncSend(producer, topic, body, (int) peer.number("single", 2000),
                                (int) peer.number("producers", 16));
                        break;
                    default:
                        System.err.println("unknown case " + name + "\nusage: " + USAGE);
                        System.exit(Peer.EXIT_USAGE);
                }
            }
            Peer.emit("done");
        } catch (Exception e) {
            Peer.fail("bench", e);
        } finally {
            producer.shutdown();
        }
        System.exit(Peer.EXIT_OK);
    }

    private static void single(DefaultMQProducer producer, String topic, byte[] body, int count)
            throws Exception {
        for (int i = 0; i < 20; i++) {
            producer.send(new Message(topic, body));
        }
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            producer.send(new Message(topic, body));
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        Peer.emit("figures", Peer.fields("case", "single", "messages", count,
                "msgsPerS", count / seconds));
    }

    private static double batch(DefaultMQProducer producer, String topic, byte[] body,
            int batches, int inFlight, String label) throws Exception {
        AtomicLong next = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        List<Exception> errors = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < inFlight; t++) {
            Thread thread = new Thread(() -> {
                try {
                    while (next.getAndIncrement() < batches) {
                        List<Message> messages = new ArrayList<>(BATCH);
                        for (int i = 0; i < BATCH; i++) {
                            messages.add(new Message(topic, body));
                        }
                        producer.send(messages);
                    }
                } catch (Exception e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!errors.isEmpty()) {
            throw errors.get(0);
        }
        double rate = (double) batches * BATCH / ((System.nanoTime() - start) / 1e9);
        Peer.emit("figures", Peer.fields("case", label, "messages", batches * BATCH,
                "inFlight", inFlight, "msgsPerS", rate));
        return rate;
    }

    private static void drain(Peer peer, DefaultMQProducer producer, String topic, byte[] body,
            int count) throws Exception {
        consumeAll(peer, producer, topic, body, count, 1, "drain");
    }

    private static void wakeup(Peer peer, DefaultMQProducer producer, String topic, byte[] body,
            int rounds) throws Exception {
        producer.send(new Message(topic, body)); // the topic exists before the consumer asks
        ConcurrentHashMap<String, Long> received = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = consumer(peer, topic, "wakeup", false);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = System.nanoTime();
            for (MessageExt msg : msgs) {
                received.put(msg.getKeys() == null ? "" : msg.getKeys(), now);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        // Until a probe arrives, the consumer has not yet parked its pulls on every queue.
        for (int probe = 0; ; probe++) {
            Message msg = new Message(topic, body);
            msg.setKeys("probe-" + probe);
            producer.send(msg);
            Thread.sleep(100);
            if (probe >= 7 && received.containsKey("probe-" + probe)) {
                break;
            }
        }
        long[] micros = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            Thread.sleep(PACE_MS);
            Message msg = new Message(topic, body);
            String key = "w-" + i;
            msg.setKeys(key);
            long sent = System.nanoTime();
            producer.send(msg);
            Long at;
            while ((at = received.get(key)) == null) {
                Thread.onSpinWait();
            }
            micros[i] = (at - sent) / 1000;
        }
        consumer.shutdown();
        Arrays.sort(micros);
        Peer.emit("figures", Peer.fields("case", "wakeup", "rounds", rounds,
                "p50Us", micros[rounds / 2], "p99Us", micros[Math.min(rounds - 1, rounds * 99 / 100)],
                "p999Us", micros[Math.min(rounds - 1, rounds * 999 / 1000)]));
    }

    private static void fanout(Peer peer, DefaultMQProducer producer, String topic, byte[] body,
            int count, int groups) throws Exception {
        consumeAll(peer, producer, topic, body, count, groups, "fanout");
    }

    /**
     * Store `count` messages in batches, then `groups` push consumers, each of a new group and
     * from the first offset, take them all: groups x count deliveries timed from the first.
     */
    private static void consumeAll(Peer peer, DefaultMQProducer producer, String topic,
            byte[] body, int count, int groups, String label) throws Exception {
        int batches = (count + BATCH - 1) / BATCH;
        batch(producer, topic, body, batches, 4, label + "-fill");
        int total = batches * BATCH;
        long cpuBefore = processCpuNanos();
        CountDownLatch all = new CountDownLatch(total * groups);
        AtomicLong first = new AtomicLong();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            String group = groups == 1 ? label : label + "-" + g;
            DefaultMQPushConsumer consumer = consumer(peer, topic, group, true);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                first.compareAndSet(0, System.nanoTime());
                for (int i = 0; i < msgs.size(); i++) {
                    all.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumers.add(consumer);
        }
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.start();
        }
        all.await();
        double seconds = (System.nanoTime() - first.get()) / 1e9;
        double clientCpuS = (processCpuNanos() - cpuBefore) / 1e9;
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.shutdown();
        }
        Peer.emit("figures", Peer.fields("case", label, "messages", total, "groups", groups,
                "msgsPerS", total * groups / seconds, "clientCpuS", clientCpuS));
    }

    /** CPU time of this whole JVM (every thread), in nanoseconds. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** `producers` threads, each sending one message at a time (sync), `count` in all. */
    private static void syncSend(DefaultMQProducer producer, String topic, byte[] body, int count,
            int producers) throws Exception {
        producer.send(new Message(topic, body)); // the topic exists before the clock starts
        AtomicLong next = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        List<Exception> errors = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < producers; t++) {
            Thread thread = new Thread(() -> {
                try {
                    while (next.getAndIncrement() < count) {
                        producer.send(new Message(topic, body));
                    }
                } catch (Exception e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!errors.isEmpty()) {
            throw errors.get(0);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        Peer.emit("figures", Peer.fields("case", "syncsend", "messages", count,
                "producers", producers, "msgsPerS", count / seconds));
    }

    private static void firstSend(DefaultMQProducer producer, String topic, byte[] body)
            throws InterruptedException {
        int attempts = 0;
        while (true) {
            attempts++;
            try {
                producer.send(new Message(topic, body), 1000);
                break;
            } catch (Exception e) {
                Thread.sleep(PACE_MS);
            }
        }
        Peer.emit("figures", Peer.fields("case", "firstsend", "attempts", attempts,
                "acceptedAtMs", System.currentTimeMillis()));
    }

    private static DefaultMQPushConsumer consumer(Peer peer, String topic, String group,
            boolean fromFirst) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("bench-" + group);
        consumer.setNamesrvAddr(peer.require("namesrv"));
        consumer.setInstanceName("bench-" + group + "-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(fromFirst ? ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
                : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        consumer.subscribe(topic, "*");
        return consumer;
    }
}
