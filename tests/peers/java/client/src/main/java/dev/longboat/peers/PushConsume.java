package dev.longboat.peers;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/**
 * A DefaultMQPushConsumer. Events: "rebalance" (topic, queues owned) whenever this member's
 * share of a topic changes, "ready" once the subscribed topic has queues here, "msg" per delivery
 * (the message, "delivery": count for this msgId, "outcome": ok or fail), and "done" after
 * --expect distinct messages were consumed or --until-deliveries deliveries made (plus
 * --linger-ms), or on SIGTERM; the consumer is shut down first, which commits offsets and
 * unregisters.
 *
 * --listener concurrently (default) or orderly; --model clustering (default) or broadcasting;
 * --tags "A || B" or --sql "a BETWEEN 1 AND 3" (MessageSelector.bySql; a selector the broker
 * refuses fails start(): an "error" event with its code, exit 1); --from first|last|timestamp (--timestamp yyyyMMddHHmmss); --fail-first K:
 * the listener fails each message's first K deliveries (RECONSUME_LATER, or for orderly
 * SUSPEND_CURRENT_QUEUE_A_MOMENT); --max-reconsume N; --consume-ms: time spent per message.
 */
public final class PushConsume {
    private static final String USAGE = "PushConsume --namesrv HOST:PORT --topic T --group G"
            + " [--tags EXPR] [--sql SELECTOR] [--expect N] [--until-deliveries N] [--linger-ms MS] [--listener concurrently|orderly]"
            + " [--model clustering|broadcasting] [--from first|last|timestamp]"
            + " [--timestamp yyyyMMddHHmmss] [--fail-first K] [--max-reconsume N]"
            + " [--consume-ms MS] [--instance NAME] [--timeout-ms MS] [--trace TOPIC|default]";

    private static final Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    private static final Set<String> consumed = ConcurrentHashMap.newKeySet();
    private static final AtomicInteger allDeliveries = new AtomicInteger();
    private static long untilDeliveries;

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        // Read once, when the client's rebalance service is first loaded (default 20 s).
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        String topic = peer.require("topic");
        long expect = peer.number("expect", Long.MAX_VALUE);
        untilDeliveries = peer.number("until-deliveries", Long.MAX_VALUE);
        long failFirst = peer.number("fail-first", 0);
        long consumeMs = peer.number("consume-ms", 0);
        CountDownLatch enough = new CountDownLatch(1);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(
                peer.require("group"), peer.aclHook(), new AllocateMessageQueueAveragely(),
                peer.trace(), peer.traceTopic());
        consumer.setNamesrvAddr(peer.require("namesrv"));
        consumer.setUseTLS(peer.tls());
        consumer.setInstanceName(peer.get("instance", "push-" + ProcessHandle.current().pid()));
        String sql = peer.get("sql", "");
        if (sql.isEmpty()) {
            consumer.subscribe(topic, peer.get("tags", "*"));
        } else {
            consumer.subscribe(topic, MessageSelector.bySql(sql));
        }
        // Clustering is the default. MessageModel is named only when broadcasting: rocketmq-client
        // 5.x moved the class (to org.apache.rocketmq.remoting.protocol.heartbeat), and the JVM
        // resolves it only where it is used, so the program runs unchanged on the 5.3.3 client.
        if ("broadcasting".equals(peer.get("model", "clustering"))) {
            consumer.setMessageModel(MessageModel.BROADCASTING);
        }
        consumer.setMaxReconsumeTimes((int) peer.number("max-reconsume", 16));
        switch (peer.get("from", "first")) {
            case "first":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                break;
            case "last":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
                break;
            default:
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
                consumer.setConsumeTimestamp(peer.require("timestamp"));
        }
        // Shorter than the client's defaults (20 s rebalance, 5 s commits), so a test waits
        // seconds, not minutes, for a member joining or leaving.
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setHeartbeatBrokerInterval(2000);
        consumer.setPollNameServerInterval(2000);
        consumer.setPullTimeDelayMillsWhenException(500);

        if ("orderly".equals(peer.get("listener", "concurrently"))) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt msg : msgs) {
                    if (!deliver(msg, failFirst, consumeMs, expect, enough)) {
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt msg : msgs) {
                    if (!deliver(msg, failFirst, consumeMs, expect, enough)) {
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }

        AtomicBoolean closed = new AtomicBoolean();
        Runnable close = () -> {
            if (closed.compareAndSet(false, true)) {
                consumer.shutdown();
                Peer.emit("done", Peer.fields(
                        "consumed", consumed.size(),
                        "deliveries", deliveries.values().stream().mapToInt(AtomicInteger::get).sum()));
                System.out.flush();
            }
        };
        // On SIGTERM: a clean shutdown, then exit 0 (the JVM's own status would be 143).
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            close.run();
            Runtime.getRuntime().halt(Peer.EXIT_OK);
        }));
        try {
            consumer.start();
        } catch (MQClientException e) {  // e.g. a selector the broker refused (CHECK_CLIENT_CONFIG)
            e.printStackTrace();
            Peer.emit("error", Peer.fields(
                    "fatal", true, "code", e.getResponseCode(), "message", e.getMessage()));
            System.out.flush();
            Runtime.getRuntime().halt(Peer.EXIT_FAILED);
        }
        Peer.emit("started", Peer.fields("clientId", consumer.buildMQClientId()));

        Set<Integer> owned = new TreeSet<>();
        boolean ready = false;
        while (!enough.await(100, TimeUnit.MILLISECONDS)) {
            if (peer.millisLeft() == 0) {
                Peer.timeout("consume " + consumed.size() + " of " + expect);
            }
            Set<Integer> now = new TreeSet<>();
            for (MessageQueue mq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                    .getProcessQueueTable().keySet()) {
                if (mq.getTopic().equals(topic)) {
                    now.add(mq.getQueueId());
                }
            }
            if (!now.equals(owned)) {
                owned = now;
                Peer.emit("rebalance", Peer.fields("topic", topic, "queues", owned));
            }
            if (!ready && !owned.isEmpty()) {
                ready = true;
                Peer.emit("ready", Peer.fields("queues", owned));
            }
        }
        Thread.sleep(peer.number("linger-ms", 0));
        close.run();
        System.exit(Peer.EXIT_OK);
    }

    /** Report one delivery; false when the listener is to fail it. */
    private static boolean deliver(
            MessageExt msg, long failFirst, long consumeMs, long expect, CountDownLatch enough) {
        int delivery = deliveries.computeIfAbsent(msg.getMsgId(), id -> new AtomicInteger())
                .incrementAndGet();
        boolean ok = delivery > failFirst;
        Map<String, Object> f = Peer.describe(msg);
        f.put("delivery", delivery);
        f.put("outcome", ok ? "ok" : "fail");
        f.put("duplicate", ok && consumed.contains(msg.getMsgId()));
        f.put("thread", Thread.currentThread().getName());
        f.put("deliveredAt", System.currentTimeMillis());
        if (consumeMs > 0) {
            try {
                Thread.sleep(consumeMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Peer.emit("msg", f);
        boolean added = ok && consumed.add(msg.getMsgId());
        if ((added && consumed.size() >= expect) || allDeliveries.incrementAndGet() >= untilDeliveries) {
            enough.countDown();
        }
        return ok;
    }
}
