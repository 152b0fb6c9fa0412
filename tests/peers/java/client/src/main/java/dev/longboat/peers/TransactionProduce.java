package dev.longboat.peers;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A TransactionMQProducer. Message i (body "tx-" + i, key the same) is sent in a transaction
 * whose local outcome is --decide[i % n] (commit, rollback or unknown); the check listener
 * answers --check-answer (commit, rollback or unknown) for every check-back. Events: "started",
 * "sent" per message (msgId, transactionId, localState, sendStatus, queueOffset), "checked"
 * per check-back (keys, msgId, topic, answer), "done" after --linger-ms (time left for
 * check-backs).
 */
public final class TransactionProduce {
    private static final String USAGE = "TransactionProduce --namesrv HOST:PORT --topic T"
            + " [--count N] [--decide commit,rollback,unknown] [--check-answer commit]"
            + " [--group PG] [--linger-ms MS] [--timeout-ms MS] [--trace TOPIC|default]";

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String topic = peer.require("topic");
        int count = (int) peer.number("count", 1);
        List<String> decide = Peer.split(peer.get("decide", "commit"));
        LocalTransactionState checkAnswer = state(peer.get("check-answer", "commit"));
        AtomicInteger checks = new AtomicInteger();

        TransactionMQProducer producer =
                new TransactionMQProducer(null, peer.get("group", "java-peer-tx-producer"), peer.aclHook(),
                        peer.trace(), peer.traceTopic());
        producer.setNamesrvAddr(peer.require("namesrv"));
        producer.setInstanceName("tx-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(10000);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return state((String) arg);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.incrementAndGet();
                Peer.emit("checked", Peer.fields("keys", msg.getKeys(), "msgId", msg.getMsgId(),
                        "topic", msg.getTopic(), "answer", checkAnswer.name()));
                return checkAnswer;
            }
        });
        try {
            producer.start();
            Peer.emit("started", Peer.fields("clientId", producer.buildMQClientId()));
            for (int i = 0; i < count; i++) {
                String body = "tx-" + i;
                Message msg = new Message(topic, "", body, body.getBytes(StandardCharsets.UTF_8));
                TransactionSendResult result =
                        producer.sendMessageInTransaction(msg, decide.get(i % decide.size()));
                Peer.emit("sent", Peer.fields("i", i, "msgId", result.getMsgId(),
                        "transactionId", result.getTransactionId(),
                        "localState", result.getLocalTransactionState().name(),
                        "sendStatus", result.getSendStatus().name(),
                        "queueOffset", result.getQueueOffset()));
            }
            Thread.sleep(peer.number("linger-ms", 0));
            producer.shutdown();
            Peer.emit("done", Peer.fields("sent", count, "checks", checks.get()));
        } catch (MQClientException e) {
            Peer.fail("transactional send", e);
        }
        System.out.flush();
        System.exit(Peer.EXIT_OK);
    }

    static LocalTransactionState state(String name) {
        switch (name) {
            case "commit":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            default:
                return LocalTransactionState.UNKNOW;
        }
    }
}
