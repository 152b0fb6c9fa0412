package dev.longboat.peers5;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Apache RocketMQ's gRPC Java client (5.x) against a gRPC endpoint, one JSON object per line on
 * stdout, exit codes as the other peers (0 done, 1 client failure, 2 bad command line, 3 the
 * --timeout-ms budget elapsed).
 *
 * <pre>
 * Grpc5 --endpoint H:P --mode produce --topic T [--count N] [--tag A] [--message-group G]
 * Grpc5 --endpoint H:P --mode simple  --topic T --group G --expect N [--skip-ack-first K]
 * Grpc5 --endpoint H:P --mode push    --topic T --group G --expect N [--fail-first K]
 * </pre>
 *
 * simple: receives (invisible 2 s), acks all but the first K deliveries (which come back);
 * push: answers FAILURE to the first K deliveries. Events: started, sent / msg, done.
 */
public final class Grpc5 {
    private final Map<String, String> options = new HashMap<>();
    private final long deadlineNanos;

    private Grpc5(String[] args) {
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                usage("bad argument " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        if (args.length % 2 != 0) {
            usage("an option lacks its value");
        }
        deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(number("timeout-ms", 60000));
    }

    public static void main(String[] args) throws Exception {
        Grpc5 peer = new Grpc5(args);
        try {
            switch (peer.require("mode")) {
                case "produce":
                    peer.produce();
                    break;
                case "simple":
                    peer.simple();
                    break;
                case "push":
                    peer.push();
                    break;
                default:
                    usage("--mode is produce, simple or push");
            }
        } catch (Exception e) {
            peer.emit("error", "message", String.valueOf(e));
            System.exit(1);
        }
        System.exit(0);
    }

    private ClientConfiguration configuration() {
        return ClientConfiguration.newBuilder()
            .setEndpoints(require("endpoint"))
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(5))
            .build();
    }

    private void produce() throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        String topic = require("topic");
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration())
            .setTopics(topic)
            .build()) {
            emit("started");
            long count = number("count", 1);
            for (int i = 0; i < count; i++) {
                MessageBuilder builder = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setKeys("java5-key-" + i)
                    .addProperty("peer", "java5")
                    .setBody(("java5-" + i).getBytes(StandardCharsets.UTF_8));
                String tag = options.get("tag");
                if (tag != null) {
                    builder.setTag(tag);
                }
                String group = options.get("message-group");
                if (group != null) {
                    builder.setMessageGroup(group);
                }
                Message message = builder.build();
                SendReceipt receipt = producer.send(message);
                emit("sent", "i", i, "msgId", receipt.getMessageId().toString());
            }
        }
        emit("done");
    }

    private Map<String, FilterExpression> subscription() {
        return Collections.singletonMap(
            require("topic"), new FilterExpression(options.getOrDefault("tags", "*"), FilterExpressionType.TAG));
    }

    private void simple() throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        long expect = number("expect", 1);
        long skipAck = number("skip-ack-first", 0);
        Set<String> acked = new java.util.HashSet<>();
        long deliveries = 0;
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(require("group"))
            .setAwaitDuration(Duration.ofSeconds(2))
            .setSubscriptionExpressions(subscription())
            .build()) {
            emit("started");
            while (acked.size() < expect) {
                checkDeadline();
                List<MessageView> views = consumer.receive(16, Duration.ofSeconds(2));
                for (MessageView view : views) {
                    deliveries++;
                    boolean ack = deliveries > skipAck;
                    emitMessage(view, ack ? "acked" : "not acked");
                    if (ack) {
                        consumer.ack(view);
                        acked.add(view.getMessageId().toString());
                    }
                }
            }
        }
        emit("done", "acked", acked.size());
    }

    private void push() throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        long expect = number("expect", 1);
        long failFirst = number("fail-first", 0);
        Set<String> consumed = ConcurrentHashMap.newKeySet();
        CountDownLatch enough = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicLong deliveries = new java.util.concurrent.atomic.AtomicLong();
        // Not closed: close() waits out the receives the consumer keeps parked on its queues
        // (PushConsumerImpl.waitingReceiveRequestFinished: up to the endpoint's long-polling
        // timeout, twenty seconds and more), and nothing reads the group once it consumed
        // enough: main ends the JVM after "done".
        PushConsumer consumer = provider.newPushConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(require("group"))
            .setSubscriptionExpressions(subscription())
            .setMessageListener(view -> {
                boolean fail = deliveries.incrementAndGet() <= failFirst;
                emitMessage(view, fail ? "FAILURE" : "SUCCESS");
                if (fail) {
                    return ConsumeResult.FAILURE;
                }
                consumed.add(view.getMessageId().toString());
                if (consumed.size() >= expect) {
                    enough.countDown();
                }
                return ConsumeResult.SUCCESS;
            })
            .build();
        emit("started");
        long left = deadlineNanos - System.nanoTime();
        if (!enough.await(Math.max(0, left), TimeUnit.NANOSECONDS)) {
            emit("timeout", "consumed", consumed.size());
            System.exit(3);
        }
        emit("done", "consumed", consumed.size());
    }

    private void emitMessage(MessageView view, String outcome) {
        emit("msg",
            "msgId", view.getMessageId().toString(),
            "body", StandardCharsets.UTF_8.decode(view.getBody()).toString(),
            "tag", view.getTag().orElse(null),
            "keys", String.join(" ", view.getKeys()),
            "messageGroup", view.getMessageGroup().orElse(null),
            "attempt", view.getDeliveryAttempt(),
            "peerProperty", view.getProperties().get("peer"),
            "outcome", outcome);
    }

    private void checkDeadline() {
        if (System.nanoTime() > deadlineNanos) {
            emit("timeout");
            System.exit(3);
        }
    }

    private String require(String name) {
        String value = options.get(name);
        if (value == null) {
            usage("--" + name + " is required");
        }
        return value;
    }

    private long number(String name, long fallback) {
        String value = options.get(name);
        try {
            return value == null ? fallback : Long.parseLong(value);
        } catch (NumberFormatException e) {
            usage("--" + name + " must be a number");
            return fallback;
        }
    }

    private static void usage(String problem) {
        System.err.println(problem + "\nsee the class comment of dev.longboat.peers5.Grpc5");
        System.exit(2);
    }

    private synchronized void emit(String event, Object... fields) {
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("event", event);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            all.put((String) fields[i], fields[i + 1]);
        }
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, Object> entry : all.entrySet()) {
            if (out.length() > 1) {
                out.append(", ");
            }
            out.append(quote(entry.getKey())).append(": ");
            Object value = entry.getValue();
            if (value == null) {
                out.append("null");
            } else if (value instanceof Number) {
                out.append(value);
            } else {
                out.append(quote(value.toString()));
            }
        }
        System.out.println(out.append('}'));
        System.out.flush();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
