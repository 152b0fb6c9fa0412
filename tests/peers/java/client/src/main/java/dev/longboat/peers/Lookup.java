package dev.longboat.peers;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The client's message lookups (its MQAdmin interface, here through a DefaultMQProducer):
 * viewMessage(offsetMsgId) for each --offset-ids, viewMessage(topic, uniqKey) for each
 * --uniq-ids, queryMessage(topic, key, --max-num, begin, end) for each --query-keys entry
 * "key" (begin 0, end now + 1 day) or "key@BEGIN:END" (milliseconds). Events: "viewed" (by,
 * id, message) or "lookup_error" (by, id, code, message) per id or key; "queried" (key, begin,
 * end, messages) per key found; "done".
 */
public final class Lookup {
    private static final String USAGE = "Lookup --namesrv HOST:PORT --topic T"
            + " [--offset-ids ID,...] [--uniq-ids ID,...] [--query-keys K,...]"
            + " [--max-num N] [--timeout-ms MS]";

    public static void main(String[] args) throws Exception {
        Peer peer = new Peer(USAGE, args);
        String topic = peer.require("topic");
        DefaultMQProducer client = new DefaultMQProducer("java-peer-lookup");
        client.setNamesrvAddr(peer.require("namesrv"));
        client.setInstanceName("lookup-" + ProcessHandle.current().pid());
        client.start();
        try {
            for (String id : Peer.split(peer.get("offset-ids", ""))) {
                try {
                    viewed("offsetMsgId", id, client.viewMessage(id));
                } catch (MQClientException | MQBrokerException e) {
                    lookupError("offsetMsgId", id, e);
                }
            }
            for (String id : Peer.split(peer.get("uniq-ids", ""))) {
                try {
                    viewed("uniqKey", id, client.viewMessage(topic, id));
                } catch (MQClientException | MQBrokerException e) {
                    lookupError("uniqKey", id, e);
                }
            }
            int maxNum = (int) peer.number("max-num", 32);
            for (String entry : Peer.split(peer.get("query-keys", ""))) {
                String[] keyRange = entry.split("@", 2);
                String key = keyRange[0];
                long begin = 0;
                long end = System.currentTimeMillis() + 86_400_000L;
                if (keyRange.length == 2) {
                    String[] range = keyRange[1].split(":");
                    begin = Long.parseLong(range[0]);
                    end = Long.parseLong(range[1]);
                }
                try {
                    QueryResult result = client.queryMessage(topic, key, maxNum, begin, end);
                    List<Map<String, Object>> found = new ArrayList<>();
                    for (MessageExt msg : result.getMessageList()) {
                        found.add(Peer.describe(msg));
                    }
                    Peer.emit("queried", Peer.fields(
                            "key", key, "begin", begin, "end", end, "messages", found));
                } catch (MQClientException e) {
                    lookupError("key", entry, e);
                }
            }
        } catch (Exception e) {
            Peer.fail("lookup", e);
        } finally {
            client.shutdown();
        }
        Peer.emit("done");
        System.exit(Peer.EXIT_OK);
    }

    private static void viewed(String by, String id, MessageExt msg) {
        Peer.emit("viewed", Peer.fields("by", by, "id", id, "message", Peer.describe(msg)));
    }

    private static void lookupError(String by, String id, Exception e) {
        int code = e instanceof MQClientException
                ? ((MQClientException) e).getResponseCode()
                : ((MQBrokerException) e).getResponseCode();
        Peer.emit("lookup_error", Peer.fields("by", by, "id", id, "code", code,
                "message", e.getMessage()));
    }
}
