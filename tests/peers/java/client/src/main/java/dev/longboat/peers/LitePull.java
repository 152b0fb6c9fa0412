package dev.longboat.peers;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A DefaultLitePullConsumer. --mode assign (default): fetchMessageQueues, assign them all, seek
 * per --seek "queueId:offset,..." then poll until --expect messages and commitSync; events
 * "assigned" (queues), "msg" per message polled, "committed" (queueId -> committed offset).
 * --mode subscribe: subscribe(topic, --tags) and poll until --expect messages (auto commit);
 * events "msg", then "done" after shutdown (which commits).
 *
 * <p>Seeking races with the pull task that assign started: RocketMQ's client (seen with 5.3.3)
 * can hand to poll() what that first task read from the queue's initial offset after the seek
 * has started a new task. Those reads are the client's, not the broker's answer to the seek, so
 * in assign mode a message below a seek offset, or at an offset already polled, is reported as
 * "stale" and not counted.
 */
public final class LitePull {
    private static final String USAGE = "LitePull --namesrv HOST:PORT --topic T --group G"
            + " [--mode assign|subscribe] [--seek QID:OFFSET,...] [--tags EXPR] [--expect N]"
            + " [--timeout-ms MS]";

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String topic = peer.require("topic");
        long expect = peer.number("expect", 1);
        boolean assign = "assign".equals(peer.get("mode", "assign"));
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(peer.require("group"));
        consumer.setNamesrvAddr(peer.require("namesrv"));
        consumer.setInstanceName("lite-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setAutoCommit(!assign);
        consumer.setPollTimeoutMillis(500);
        List<MessageQueue> queues = new ArrayList<>();
        // queue id -> the lowest offset a poll may still hand out (seek offset, then next offset)
        Map<Integer, Long> lowest = new HashMap<>();
        try {
            if (assign) {
                consumer.start();
                Collection<MessageQueue> found = consumer.fetchMessageQueues(topic);
                queues.addAll(found);
                queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
                consumer.assign(queues);
                List<Integer> ids = new ArrayList<>();
                for (MessageQueue mq : queues) {
                    ids.add(mq.getQueueId());
                }
                Peer.emit("assigned", Peer.fields("queues", ids));
                for (String pair : Peer.split(peer.get("seek", ""))) {
                    String[] qo = pair.split(":");
                    consumer.seek(queues.get(Integer.parseInt(qo[0])), Long.parseLong(qo[1]));
                    lowest.put(Integer.parseInt(qo[0]), Long.parseLong(qo[1]));
                }
            } else {
                consumer.subscribe(topic, peer.get("tags", "*"));
                consumer.start();
            }
            long polled = 0;
            while (polled < expect) {
                if (peer.millisLeft() == 0) {
                    Peer.timeout("poll " + polled + " of " + expect);
                }
                for (MessageExt msg : consumer.poll()) {
                    long floor = lowest.getOrDefault(msg.getQueueId(), 0L);
                    if (assign && msg.getQueueOffset() < floor) {
                        Peer.emit("stale", Peer.fields("queueOffset", msg.getQueueOffset()));
                        continue;
                    }
                    lowest.put(msg.getQueueId(), msg.getQueueOffset() + 1);
                    Peer.emit("msg", Peer.describe(msg));
                    polled++;
                }
            }
            if (assign) {
                consumer.commitSync();
                Map<String, Object> committed = Peer.fields();
                for (MessageQueue mq : queues) {
                    committed.put(String.valueOf(mq.getQueueId()), consumer.committed(mq));
                }
                Peer.emit("committed", Peer.fields("offsets", committed));
            }
        } catch (Exception e) {
            Peer.fail("lite pull", e);
        }
        consumer.shutdown();
        Peer.emit("done");
        System.exit(Peer.EXIT_OK);
    }
}
