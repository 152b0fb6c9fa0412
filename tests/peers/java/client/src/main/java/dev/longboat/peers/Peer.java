package dev.longboat.peers;

import com.alibaba.fastjson.JSON;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * What every peer program shares: "--name value" options, one JSON object per line on stdout,
 * and the exit codes of the Node.js peers (0 done, 1 failure reported by the client, 2 bad
 * command line, 3 the --timeout-ms budget elapsed), so a test can tell them apart.
 */
final class Peer {
    static final int EXIT_OK = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_TIMEOUT = 3;

    private final Map<String, String> options = new HashMap<>();
    final long deadlineNanos;

    Peer(String usage, String[] args) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--") || i + 1 >= args.length) {
                usage(usage, "bad argument " + arg);
            }
            options.put(arg.substring(2), args[++i]);
        }
        if (!options.containsKey("namesrv")) {
            usage(usage, "--namesrv is required");
        }
        deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(number("timeout-ms", 30000));
    }

    private static void usage(String usage, String problem) {
        System.err.println(problem + "\nusage: " + usage);
        System.exit(EXIT_USAGE);
    }

    String get(String name, String fallback) {
        return options.getOrDefault(name, fallback);
    }

    String require(String name) {
        String value = options.get(name);
        if (value == null) {
            System.err.println("--" + name + " is required");
            System.exit(EXIT_USAGE);
        }
        return value;
    }

    long number(String name, long fallback) {
        String value = options.get(name);
        return value == null ? fallback : Long.parseLong(value);
    }

    /**
     * The ACL hook of --access-key / --secret-key (RocketMQ's AclClientRPCHook, which signs
     * every request), or null without them.
     */
    RPCHook aclHook() {
        String accessKey = options.get("access-key");
        if (accessKey == null) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(accessKey, require("secret-key")));
    }

    /**
     * --trace TOPIC: the client writes message traces (enableMsgTrace) to TOPIC, or to
     * RMQ_SYS_TRACE_TOPIC for "default".
     */
    boolean trace() {
        return options.containsKey("trace");
    }

    /** The customized trace topic of --trace (null: RocketMQ's default). */
    String traceTopic() {
        String topic = options.get("trace");
        return topic == null || topic.equals("default") ? null : topic;
    }

    /** --tls true: the client connects with TLS (setUseTLS; the server is not verified). */
    boolean tls() {
        return Boolean.parseBoolean(options.getOrDefault("tls", "false"));
    }

    long millisLeft() {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
    }

    /** Print one event; synchronized because client callbacks run on several threads. */
    static synchronized void emit(String event, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        line.putAll(fields);
        System.out.println(JSON.toJSONString(line));
        System.out.flush();
    }

    static void emit(String event) {
        emit(event, new LinkedHashMap<>());
    }

    static Map<String, Object> fields(Object... pairs) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    /** Report a failure and exit 1 (the test reads the message on stderr and in the event). */
    static void fail(String what, Throwable error) {
        error.printStackTrace();
        emit("error", fields("fatal", true, "what", what, "message", String.valueOf(error)));
        System.out.flush();
        Runtime.getRuntime().halt(EXIT_FAILED);
    }

    static void timeout(String what) {
        emit("error", fields("fatal", true, "what", what, "message", "timeout"));
        System.out.flush();
        Runtime.getRuntime().halt(EXIT_TIMEOUT);
    }

    /** A received message as the tests compare it: body as UTF-8 when it is, else base64. */
    static Map<String, Object> describe(MessageExt msg) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("msgId", msg.getMsgId());
        map.put("offsetMsgId", msg instanceof MessageClientExt
                ? ((MessageClientExt) msg).getOffsetMsgId() : msg.getMsgId());
        map.put("topic", msg.getTopic());
        map.put("tags", msg.getTags());
        map.put("keys", msg.getKeys());
        putBody(map, msg.getBody());
        map.put("queueId", msg.getQueueId());
        map.put("queueOffset", msg.getQueueOffset());
        map.put("commitLogOffset", msg.getCommitLogOffset());
        map.put("reconsumeTimes", msg.getReconsumeTimes());
        map.put("storeHost", String.valueOf(msg.getStoreHost()));
        map.put("bornTimestamp", msg.getBornTimestamp());
        map.put("storeTimestamp", msg.getStoreTimestamp());
        map.put("brokerName", msg.getBrokerName());
        map.put("properties", msg.getProperties());
        return map;
    }

    static void putBody(Map<String, Object> map, byte[] body) {
        map.put("bodySize", body == null ? 0 : body.length);
        if (body == null) {
            map.put("body", null);
            return;
        }
        try {
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(body)).toString();
            map.put("body", text);
            map.put("bodyEncoding", "utf8");
        } catch (CharacterCodingException e) {
            map.put("body", Base64.getEncoder().encodeToString(body));
            map.put("bodyEncoding", "base64");
        }
    }

    static List<String> split(String csv) {
        List<String> parts = new ArrayList<>();
        if (csv != null && !csv.isEmpty()) {
            for (String part : csv.split(",")) {
                parts.add(part);
            }
        }
        return parts;
    }
}
