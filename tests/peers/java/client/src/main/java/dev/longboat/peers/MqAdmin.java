package dev.longboat.peers;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs `mqadmin` commands, unchanged, in one JVM: each is what `bin/mqadmin CMD ARGS -n NS`
 * runs ({@code MQAdminStartup.main0}), its stdout and stderr captured and printed as one
 * {@code command} event ({@code args}, {@code stdout}, {@code stderr}); then {@code done}.
 * One JVM for many commands keeps a test's cost to one start.
 *
 * <p>{@code --namesrv NS --commands '[["topicList"], ["topicStatus", "-t", "T"]]'}
 */
public final class MqAdmin {
    private static final String USAGE = "MqAdmin --namesrv HOST:PORT --commands JSON-ARRAY-OF-ARGV";

    public static void main(String[] args) throws IOException {
        Peer peer = new Peer(USAGE, args);
        String namesrv = peer.require("namesrv");
        JSONArray commands = JSON.parseArray(peer.require("commands"));
        // mqadmin reads ROCKETMQ_HOME/conf/logback_tools.xml when its class loads: give it one
        // that keeps the tools' logging off stdout.
        // Removed at exit, the file first (deleteOnExit runs in reverse order of asking).
        Path home = Files.createTempDirectory("mqadmin-home");
        home.toFile().deleteOnExit();
        Path conf = Files.createDirectories(home.resolve("conf"));
        conf.toFile().deleteOnExit();
        Path logback = Files.writeString(conf.resolve("logback_tools.xml"),
                "<configuration><root level=\"WARN\"/></configuration>\n");
        logback.toFile().deleteOnExit();
        System.setProperty("rocketmq.home.dir", home.toString());

        PrintStream out = System.out;
        PrintStream err = System.err;
        Peer.emit("started");
        for (int i = 0; i < commands.size(); i++) {
            List<String> argv = new ArrayList<>();
            for (Object arg : commands.getJSONArray(i)) {
                argv.add(String.valueOf(arg));
            }
            List<String> full = new ArrayList<>(argv);
            full.add("-n");
            full.add(namesrv);
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            try {
                MQAdminStartup.main0(full.toArray(new String[0]), null);
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(out);
                System.setErr(err);
            }
            Peer.emit("command", Peer.fields(
                    "args", argv,
                    "stdout", stdout.toString(StandardCharsets.UTF_8),
                    "stderr", stderr.toString(StandardCharsets.UTF_8)));
        }
        Peer.emit("done");
        System.exit(Peer.EXIT_OK);
    }
}
