package dev.longboat.peers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
 * RocketMQ 4.9.8 Java client against either broker, so the broker is the only variable. Client
 * settings are the client's defaults except where said.
 *
 * <p>Every case but firstsend is timed BY DURATION on one set of connections: --warmup-ms of
 * the same load first (a JIT compiles the hot path, connections and routes settle), then a
 * window of --duration-ms whose edges the case announces as "window" events (edge "open" and
 * "close"), so the harness can read the broker's CPU time exactly over the window; then one
 * "figures" event per case.
 *
 * <p>--cases, comma-separated, run in turn: single (one producer thread, sync sends of
 * --body-size bytes, one message each; p50/p99 latency), batch (--in-flight threads, each
 * sending one batch of 64 synchronously at a time), syncsend (--producers threads, sync sends
 * of one message each), drain (batches stored for warm-up + duration, then a push consumer of
 * a new group from the first offset; the window opens --warmup-ms after its first delivery
 * and closes after --duration-ms or when the backlog is consumed, "exhausted" then true),
 * fanout (as drain, with --groups consumers of new groups at once, counting every delivery),
 * wakeup (a push consumer parked on an empty topic; one sync send every 20 ms, timed from
 * before send() to the listener, both in this JVM), firstsend (sync sends every 20 ms until one
 * is accepted; prints the wall clock of that moment, "acceptedAtMs", for a broker's cold start
 * measured from outside).
 */
public final class Bench {
    private static final String USAGE = "Bench --namesrv HOST:PORT --cases single,batch,"
            + "syncsend,drain,fanout,wakeup,firstsend [--topic-prefix P] [--warmup-ms MS]"
            + " [--duration-ms MS] [--in-flight K] [--producers P] [--groups G]"
            + " [--body-size B] [--timeout-ms MS]";
    private static final int BATCH = 64;
    private static final long PACE_MS = 20;

    /** One unit of load; returns the messages it moved. */
    private interface Op {
        int run() throws Exception;
    }

    /** The warm-up and the measured window of one case, in System.nanoTime(). */
    private static final class Window {
        final String label;
        final long open;
        final long close;

        Window(String label, long warmupMs, long durationMs) {
            this.label = label;
            this.open = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(warmupMs);
            this.close = open + TimeUnit.MILLISECONDS.toNanos(durationMs);
        }

        boolean holds(long start, long end) {
            return start >= open && end <= close;
        }

        /** Sleep to `at`, then tell the harness this edge passed. */
        void announce(long at, String edge) throws InterruptedException {
            long left = at - System.nanoTime();
            if (left > 0) {
                TimeUnit.NANOSECONDS.sleep(left);
            }
            Peer.emit("window", Peer.fields("case", label, "edge", edge));
        }
    }

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String prefix = peer.get("topic-prefix", "bench");
        byte[] body = new byte[(int) peer.number("body-size", 256)];
        Arrays.fill(body, (byte) 'x');
        long warmupMs = peer.number("warmup-ms", 3000);
        long durationMs = peer.number("duration-ms", 10000);
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
                        sends(producer, topic, body, 1, new Window(name, warmupMs, durationMs));
                        break;
                    case "syncsend":
                        sends(producer, topic, body, (int) peer.number("producers", 8),
                                new Window(name, warmupMs, durationMs));
                        break;
                    case "batch":
                        batches(producer, topic, body, (int) peer.number("in-flight", 4),
                                new Window(name, warmupMs, durationMs));
                        break;
                    case "drain":
                        consumeAll(peer, producer, topic, body, 1, name, warmupMs, durationMs);
                        break;
                    case "fanout":
                        consumeAll(peer, producer, topic, body, (int) peer.number("groups", 4),
                                name, warmupMs, durationMs);
                        break;
                    case "wakeup":
                        wakeup(peer, producer, topic, body, name, warmupMs, durationMs);
                        break;
                    case "firstsend":
                        firstSend(producer, topic, body);
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

    /**
     * `threads` threads run `op` back to back until the window closes; the messages of the ops
     * that started and ended inside the window count, and each such op's latency (µs).
     */
    private static long[] timed(Window window, int threads, Op op, AtomicLong counted)
            throws Exception {
        List<Thread> workers = new ArrayList<>();
        List<Exception> errors = new ArrayList<>();
        List<long[]> latencies = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long[] mine = new long[1 << 16];
            int[] used = {0};
            Thread thread = new Thread(() -> {
                long[] own = mine;
                try {
                    while (System.nanoTime() < window.close) {
                        long start = System.nanoTime();
                        int moved = op.run();
                        long end = System.nanoTime();
                        if (window.holds(start, end)) {
                            counted.addAndGet(moved);
                            if (used[0] == own.length) {
                                own = Arrays.copyOf(own, own.length * 2);
                            }
                            own[used[0]++] = (end - start) / 1000;
                        }
                    }
                } catch (Exception e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
                synchronized (latencies) {
                    latencies.add(Arrays.copyOf(own, used[0]));
                }
            });
            workers.add(thread);
            thread.start();
        }
        window.announce(window.open, "open");
        window.announce(window.close, "close");
        for (Thread thread : workers) {
            thread.join();
        }
        if (!errors.isEmpty()) {
            throw errors.get(0);
        }
        long[] all = latencies.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        return all;
    }

    private static double seconds(Window window) {
        return (window.close - window.open) / 1e9;
    }

    /** `threads` threads, each sending one message at a time (sync). */
    private static void sends(DefaultMQProducer producer, String topic, byte[] body, int threads,
            Window window) throws Exception {
        producer.send(new Message(topic, body)); // the topic exists before the load starts
        AtomicLong counted = new AtomicLong();
        long[] micros = timed(window, threads, () -> {
            producer.send(new Message(topic, body));
            return 1;
        }, counted);
        Peer.emit("figures", Peer.fields("case", window.label, "producers", threads,
                "messages", counted.get(), "seconds", seconds(window),
                "msgsPerS", counted.get() / seconds(window),
                "p50Us", percentile(micros, 50), "p99Us", percentile(micros, 99)));
    }

    /** `inFlight` threads, each sending one batch of 64 at a time (sync). */
    private static void batches(DefaultMQProducer producer, String topic, byte[] body,
            int inFlight, Window window) throws Exception {
        AtomicLong counted = new AtomicLong();
        timed(window, inFlight, () -> {
            List<Message> messages = new ArrayList<>(BATCH);
            for (int i = 0; i < BATCH; i++) {
                messages.add(new Message(topic, body));
            }
            producer.send(messages);
            return BATCH;
        }, counted);
        Peer.emit("figures", Peer.fields("case", window.label, "inFlight", inFlight,
                "messages", counted.get(), "seconds", seconds(window),
                "msgsPerS", counted.get() / seconds(window)));
    }

    /**
     * Store batches for warm-up + duration, then `groups` push consumers, each of a new group
     * and from the first offset, take them: the deliveries of the window that opens `warmupMs`
     * after the first delivery count (it closes early, "exhausted", when the backlog ends).
     */
    private static void consumeAll(Peer peer, DefaultMQProducer producer, String topic,
            byte[] body, int groups, String label, long warmupMs, long durationMs)
            throws Exception {
        // The backlog: every batch sent counts, the last ones past the fill's window too.
        AtomicLong stored = new AtomicLong();
        timed(new Window(label + "-fill", 0, warmupMs + durationMs), 4, () -> {
            List<Message> messages = new ArrayList<>(BATCH);
            for (int i = 0; i < BATCH; i++) {
                messages.add(new Message(topic, body));
            }
            producer.send(messages);
            stored.addAndGet(BATCH);
            return BATCH;
        }, new AtomicLong());
        long total = stored.get() * groups;
        AtomicLong delivered = new AtomicLong();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            String group = groups == 1 ? label : label + "-" + g;
            DefaultMQPushConsumer consumer = consumer(peer, topic, group, true);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                delivered.addAndGet(msgs.size());
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumers.add(consumer);
        }
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.start();
        }
        while (delivered.get() == 0) {
            Thread.sleep(1);
        }
        Window window = new Window(label, warmupMs, durationMs);
        window.announce(window.open, "open");
        long cpuBefore = processCpuNanos();
        long before = delivered.get();
        while (System.nanoTime() < window.close && delivered.get() < total) {
            Thread.sleep(1);
        }
        long closed = Math.min(System.nanoTime(), window.close);
        long counted = delivered.get() - before;
        double clientCpuS = (processCpuNanos() - cpuBefore) / 1e9;
        Peer.emit("window", Peer.fields("case", label, "edge", "close"));
        boolean exhausted = delivered.get() >= total;
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.shutdown();
        }
        double seconds = (closed - window.open) / 1e9;
        Peer.emit("figures", Peer.fields("case", label, "stored", stored.get(), "groups", groups,
                "messages", counted, "seconds", seconds, "msgsPerS", counted / seconds,
                "exhausted", exhausted, "clientCpuS", clientCpuS));
    }

    private static void wakeup(Peer peer, DefaultMQProducer producer, String topic, byte[] body,
            String label, long warmupMs, long durationMs) throws Exception {
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
        // The warm-up is rounds like the measured ones, from here.
        Window window = new Window(label, warmupMs, durationMs);
        List<Long> samples = new ArrayList<>();
        boolean open = false;
        for (int round = 0; System.nanoTime() < window.close; round++) {
            if (!open && System.nanoTime() >= window.open) {
                window.announce(window.open, "open");
                open = true;
            }
            Thread.sleep(PACE_MS);
            Message msg = new Message(topic, body);
            String key = "w-" + round;
            msg.setKeys(key);
            long sent = System.nanoTime();
            producer.send(msg);
            Long at;
            while ((at = received.get(key)) == null) {
                Thread.onSpinWait();
            }
            if (open && at <= window.close) {
                samples.add((at - sent) / 1000);
            }
        }
        Peer.emit("window", Peer.fields("case", label, "edge", "close"));
        consumer.shutdown();
        long[] micros = samples.stream().mapToLong(Long::longValue).sorted().toArray();
        Peer.emit("figures", Peer.fields("case", label, "rounds", micros.length,
                "p50Us", percentile(micros, 50), "p99Us", percentile(micros, 99),
                "p999Us", percentile(micros, 99.9)));
    }

    /** The `pct` percentile of sorted `values` (nearest rank below), 0 when empty. */
    private static long percentile(long[] sorted, double pct) {
        if (sorted.length == 0) {
            return 0;
        }
        int rank = (int) Math.min(sorted.length - 1, Math.floor(sorted.length * pct / 100));
        return sorted[rank];
    }

    /** CPU time of this whole JVM (every thread), in nanoseconds. */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
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
