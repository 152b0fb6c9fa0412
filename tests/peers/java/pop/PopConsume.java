// RocketMQ 5.3.3's remoting push consumer in pop mode (setClientRebalance(false)): the broker
// assigns and pops, the client acks.  Run in source mode on server5's classpath (which holds
// rocketmq-client 5.3.3): java -cp <classpath> PopConsume.java namesrv group topic count
// Prints "GOT <body> <reconsumeTimes> <popped>" per message (popped: "pop" when the message came
// by a pop, carrying its POP_CK checkpoint, else "pull"), then "DONE" once `count` distinct
// bodies came.  The broker decides pull or pop: RocketMQ pops only for a group whose mode an
// operator set to POP (mqadmin setConsumeMode), and pulls otherwise.

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class PopConsume {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], group = args[1], topic = args[2];
        int count = Integer.parseInt(args[3]);
        Set<String> seen = ConcurrentHashMap.newKeySet();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = null;
        // The route lookup in start() once failed on a loaded machine ("send request failed"):
        // a start that fails is retried with a new consumer, twice.
        for (int tries = 1; consumer == null; tries++) {
            DefaultMQPushConsumer candidate = new DefaultMQPushConsumer(group);
            candidate.setNamesrvAddr(namesrv);
            candidate.setClientRebalance(false);
            candidate.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            candidate.subscribe(topic, "*");
            candidate.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt msg : msgs) {
                    String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                    String how = msg.getProperty("POP_CK") != null ? "pop" : "pull";
                    System.out.println("GOT " + body + " " + msg.getReconsumeTimes() + " " + how);
                    seen.add(body);
                }
                if (seen.size() >= count) {
                    done.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            try {
                candidate.start();
                consumer = candidate;
            } catch (Exception e) {
                candidate.shutdown();
                if (tries == 3) {
                    throw e;
                }
                System.err.println("start failed, again: " + e);
                Thread.sleep(1000);
            }
        }
        boolean all = done.await(60, TimeUnit.SECONDS);
        Thread.sleep(2000); // the acks of the last batch are sent after the listener returns
        consumer.shutdown();
        System.out.println(all ? "DONE" : "TIMEOUT " + seen.size());
        System.exit(all ? 0 : 1);
    }
}
