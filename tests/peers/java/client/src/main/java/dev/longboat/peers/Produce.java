package dev.longboat.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends --count messages with DefaultMQProducer, in one of its send modes, then shuts the
 * producer down (UNREGISTER_CLIENT). Events: "started", "sent" per message (for one-way sends
 * only "i", as there is no answer), "done", or a fatal "error" (exit 1) carrying the broker's or
 * client's response code.
 *
 * Message i has body --body (default mode + "-" + i; --body-size pads it to that many bytes, so
 * 4096 and over is compressed by the client), tag --tags[i % n], key --keys + "-" + i, user
 * properties --props "k=v,k2=v2", delay level --delay-level. --mode, one or several
 * comma-separated (--count messages each, in turn): sync (default), async, oneway, batch (one
 * send of all), ordered (MessageQueueSelector: message i carries sharding key "k" +
 * (i % --shard-keys) and goes to queue hash(key) % queues, in order). --interval-ms paces
 * sync, oneway and ordered sends. --linger-ms: time before the producer stops (its trace
 * writer's last sends, with --trace).
 */
public final class Produce {
    private static final String USAGE = "Produce --namesrv HOST:PORT --topic T [--count N]"
            + " [--mode sync|async|oneway|batch|ordered] [--tags A,B] [--keys PREFIX]"
            + " [--body TEXT] [--body-size B] [--props k=v,...] [--delay-level L]"
            + " [--shard-keys K] [--interval-ms MS] [--group PG] [--timeout-ms MS]"
            + " [--access-key AK --secret-key SK] [--tls true] [--trace TOPIC|default] [--linger-ms MS]";

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String topic = peer.require("topic");
        int count = (int) peer.number("count", 1);
        DefaultMQProducer producer =
                new DefaultMQProducer(peer.get("group", "java-peer-producer"), peer.aclHook(),
                        peer.trace(), peer.traceTopic());
        producer.setNamesrvAddr(peer.require("namesrv"));
        producer.setUseTLS(peer.tls());
        producer.setInstanceName("produce-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(10000);
        try {
            producer.start();
            Peer.emit("started", Peer.fields("clientId", producer.buildMQClientId()));
            List<String> modes = Peer.split(peer.get("mode", "sync"));
            for (String mode : modes) {
                List<Message> messages = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    messages.add(message(peer, topic, mode, i));
                }
                send(peer, producer, mode, messages);
            }
            Thread.sleep(peer.number("linger-ms", 0));
            Peer.emit("done", Peer.fields("sent", count * modes.size()));
        } catch (MQClientException e) {
            failWithCode(e, e.getResponseCode());
        } catch (MQBrokerException e) {
            failWithCode(e, e.getResponseCode());
        } finally {
            producer.shutdown();
        }
        System.exit(Peer.EXIT_OK);
    }

    private static void failWithCode(Exception e, int code) {
        e.printStackTrace();
        Peer.emit("error", Peer.fields("fatal", true, "code", code, "message", e.getMessage()));
        Runtime.getRuntime().halt(Peer.EXIT_FAILED);
    }

    static Message message(Peer peer, String topic, String mode, int i) {
        List<String> tags = Peer.split(peer.get("tags", ""));
        String body = peer.get("body", mode + "-" + i);
        int size = (int) peer.number("body-size", 0);
        StringBuilder padded = new StringBuilder(body);
        while (padded.length() < size) {
            padded.append((char) ('a' + padded.length() % 26));
        }
        Message msg = new Message(topic, padded.toString().getBytes(StandardCharsets.UTF_8));
        if (!tags.isEmpty()) {
            msg.setTags(tags.get(i % tags.size()));
        }
        String keys = peer.get("keys", null);
        if (keys != null) {
            msg.setKeys(keys + "-" + i);
        }
        for (String pair : Peer.split(peer.get("props", ""))) {
            String[] kv = pair.split("=", 2);
            msg.putUserProperty(kv[0], kv[1]);
        }
        long delay = peer.number("delay-level", 0);
        if (delay > 0) {
            msg.setDelayTimeLevel((int) delay);
        }
        return msg;
    }

    private static void send(Peer peer, DefaultMQProducer producer, String mode, List<Message> messages)
            throws Exception {
        long interval = peer.number("interval-ms", 0);
        switch (mode) {
            case "sync":
                for (int i = 0; i < messages.size(); i++) {
                    sent(mode, i, messages.get(i), producer.send(messages.get(i)));
                    Thread.sleep(interval);
                }
                break;
            case "async":
                sendAsync(peer, producer, messages);
                break;
            case "oneway":
                for (int i = 0; i < messages.size(); i++) {
                    producer.sendOneway(messages.get(i));
                    Peer.emit("sent", Peer.fields("mode", mode, "i", i));
                    Thread.sleep(interval);
                }
                break;
            case "batch":
                SendResult result = producer.send(messages);
                String[] ids = result.getMsgId().split(",");
                String[] offsetIds = result.getOffsetMsgId().split(",");
                for (int i = 0; i < messages.size(); i++) {
                    Map<String, Object> f = describe(mode, i, messages.get(i), result);
                    f.put("msgId", ids[i]);
                    f.put("offsetMsgId", offsetIds[i]);
                    f.put("queueOffset", result.getQueueOffset() + i);
                    Peer.emit("sent", f);
                }
                break;
            case "ordered":
                int keys = (int) peer.number("shard-keys", 4);
                MessageQueueSelector byKey = (queues, msg, arg) ->
                        queues.get(Math.floorMod(arg.hashCode(), queues.size()));
                for (int i = 0; i < messages.size(); i++) {
                    String key = "k" + (i % keys);
                    Map<String, Object> f = describe(mode, i, messages.get(i),
                            producer.send(messages.get(i), byKey, key));
                    f.put("shardKey", key);
                    Peer.emit("sent", f);
                    Thread.sleep(interval);
                }
                break;
            default:
                System.err.println("unknown --mode " + mode + "\nusage: " + USAGE);
                System.exit(Peer.EXIT_USAGE);
        }
    }

    private static void sendAsync(Peer peer, DefaultMQProducer producer, List<Message> messages)
            throws Exception {
        CountDownLatch answered = new CountDownLatch(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            final int index = i;
            final Message msg = messages.get(i);
            producer.send(msg, new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    sent("async", index, msg, result);
                    answered.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    Peer.fail("async send " + index, e);
                }
            });
        }
        if (!answered.await(peer.millisLeft(), TimeUnit.MILLISECONDS)) {
            Peer.timeout("async sends");
        }
    }

    private static void sent(String mode, int i, Message msg, SendResult result) {
        Peer.emit("sent", describe(mode, i, msg, result));
    }

    private static Map<String, Object> describe(String mode, int i, Message msg, SendResult result) {
        return Peer.fields(
                "mode", mode,
                "i", i,
                "msgId", result.getMsgId(),
                "offsetMsgId", result.getOffsetMsgId(),
                "queueId", result.getMessageQueue().getQueueId(),
                "queueOffset", result.getQueueOffset(),
                "brokerName", result.getMessageQueue().getBrokerName(),
                "sendStatus", result.getSendStatus().name(),
                "tags", msg.getTags(),
                "keys", msg.getKeys());
    }
}
