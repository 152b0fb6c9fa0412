'use strict';

// Subscribe with the real ali-ons push consumer (CLUSTERING) and report each delivery as a JSON
// line; optionally fail the first K deliveries of every message to drive the broker retry path.

const { Consumer, Producer } = require('ali-ons');
const c = require('./lib/common');

const USAGE = `usage: node consume.js --namesrv HOST:PORT --topic T --group G [options]
  --tags "TagA || TagB"   subscription expression (default "*")
  --expect N              exit 0 after N distinct messages were consumed successfully
                          (without it: consume until SIGTERM/SIGINT, which exits 0)
  --fail-first K          the listener throws on the first K deliveries of each message
  --linger-ms MS          keep consuming MS ms after --expect is reached (default 0)
  --from first|last|timestamp   consumeFromWhere for a group with no offset (default first)
  --max-reconsume N       maxReconsumeTimes (default 16, ali-ons' default)
  --rebalance-ms MS       rebalance interval (default 1000; ali-ons: 10000)
  --persist-ms MS         offset commit interval (default 1000; ali-ons: 5000)
  --route-poll-ms MS      name-server route refresh interval (default 2000; ali-ons: 30000)
  --heartbeat-ms MS       broker heartbeat interval (default 5000; ali-ons: 30000)
  --timeout-ms MS         exit 3 after MS milliseconds, whatever was consumed (default 30000)
  --access-key K --secret-key S   sign requests like Aliyun ONS (brokers ignore the fields)
  --verbose               ali-ons info logs on stderr
stdout: {"event":"msg",...} per delivery ("outcome" "ok" or "fail"), {"event":"rebalance",...},
        {"event":"ready",...} once the topic's queues were allocated, {"event":"done",...} at the
        end; {"event":"error",...} for errors ali-ons reports.`;

const FROM = {
  first: 'CONSUME_FROM_FIRST_OFFSET',
  last: 'CONSUME_FROM_LAST_OFFSET',
  timestamp: 'CONSUME_FROM_TIMESTAMP',
};

// ali-ons parses the producer's trailing 0x02 separator into an empty-named property; drop it.
function cleanProperties(props) {
  const out = Object.assign({}, props);
  if (out[''] === '') {
    delete out[''];
  }
  return out;
}

const DELIBERATE = 'longboat-peer: deliberate failure';

async function main() {
  const args = c.parseCommandLine({
    topic: { type: 'string' },
    group: { type: 'string' },
    tags: { type: 'string', default: '*' },
    expect: { type: 'string' },
    'fail-first': { type: 'string', default: '0' },
    'linger-ms': { type: 'string', default: '0' },
    from: { type: 'string', default: 'first' },
    'max-reconsume': { type: 'string', default: '16' },
    'rebalance-ms': { type: 'string', default: '1000' },
    'persist-ms': { type: 'string', default: '1000' },
    'route-poll-ms': { type: 'string', default: '2000' },
    'heartbeat-ms': { type: 'string', default: '5000' },
  }, USAGE);
  for (const required of [ 'topic', 'group' ]) {
    if (!args[required]) {
      process.stderr.write(`[consume.js] usage error: --${required} is required\n${USAGE}\n`);
      process.exit(c.EXIT_USAGE);
    }
  }
  if (!FROM[args.from]) {
    process.stderr.write(`[consume.js] usage error: --from must be first, last or timestamp\n${USAGE}\n`);
    process.exit(c.EXIT_USAGE);
  }
  const expect = c.intOption(args, 'expect', USAGE);
  const failFirst = c.intOption(args, 'fail-first', USAGE);
  const lingerMs = c.intOption(args, 'linger-ms', USAGE);
  const timeoutMs = c.intOption(args, 'timeout-ms', USAGE);
  const topic = args.topic;

  const deliveries = new Map(); // message identity -> deliveries seen
  const consumed = new Set(); // identities consumed successfully
  let totalDeliveries = 0;
  let consumer = null;
  let finishing = false;

  const stats = () => ({ consumed: consumed.size, deliveries: totalDeliveries });

  // close() commits the in-memory offsets (UPDATE_CONSUMER_OFFSET for every owned queue) and
  // unregisters the group (UNREGISTER_CLIENT) before closing the connections.
  const finish = async (code, reason, budgetMs = 5000) => {
    if (finishing) {
      return;
    }
    finishing = true;
    const closing = consumer;
    consumer = null;
    try {
      if (closing) {
        await c.withTimeout(closing.close(), budgetMs, 'consumer.close()');
      }
      await c.withTimeout(c.closeDefaultProducer(Producer), budgetMs, 'inner producer close()');
    } catch (err) {
      c.log('close failed:', err.stack || err);
      if (code === c.EXIT_OK) {
        c.fail(c.EXIT_FAILED, 'closing the consumer failed', err);
        return;
      }
    }
    if (code === c.EXIT_OK) {
      c.emit('done', Object.assign({ reason }, stats()));
      c.exit(code);
    } else {
      c.fail(code, `${reason} (consumed ${consumed.size}` +
        `${expect !== undefined ? ` of ${expect}` : ''}, ${totalDeliveries} deliveries)`);
    }
  };

  c.armDeadline(timeoutMs, () => {
    if (finishing) {
      c.fail(c.EXIT_TIMEOUT, `timed out after ${timeoutMs} ms while closing`);
    } else {
      // Already late: spend at most 1 s on a clean close.
      finish(c.EXIT_TIMEOUT, `timed out after ${timeoutMs} ms`, 1000);
    }
  });
  for (const sig of [ 'SIGTERM', 'SIGINT' ]) {
    process.on(sig, () => finish(c.EXIT_OK, sig));
  }

  const opts = c.clientOptions(args);
  const problems = await c.checkNameServers(opts.nameSrv, Math.min(2000, timeoutMs));
  if (problems.length) {
    c.fail(c.EXIT_FAILED, `cannot connect to name server (${problems.join('; ')})`);
    return;
  }

  consumer = new Consumer(Object.assign(opts, {
    consumerGroup: args.group,
    isBroadcast: false,
    consumeFromWhere: FROM[args.from],
    maxReconsumeTimes: c.intOption(args, 'max-reconsume', USAGE),
    rebalanceInterval: c.intOption(args, 'rebalance-ms', USAGE),
    persistConsumerOffsetInterval: c.intOption(args, 'persist-ms', USAGE),
    pollNameServerInteval: c.intOption(args, 'route-poll-ms', USAGE),
    heartbeatBrokerInterval: c.intOption(args, 'heartbeat-ms', USAGE),
    // Re-pull after a failed pull in 0.5 s instead of 3 s.
    pullTimeDelayMillsWhenException: 500,
  }));

  consumer.on('error', err => {
    if (err && String(err.message).includes(DELIBERATE)) {
      return; // our own listener failure, already reported as a "fail" delivery
    }
    c.log('ali-ons error:', err && err.stack || err);
    c.emit('error', Object.assign({ fatal: false }, c.describeError(err)));
  });

  // Observe rebalancing (ali-ons has no public hook): report the queues this client owns after
  // each rebalance of a topic, and "ready" once the subscribed topic has been allocated, so a
  // test knows when messages it produces from now on will be pulled.
  const owned = new Map();
  let ready = false;
  const rebalanceByTopic = consumer.rebalanceByTopic;
  consumer.rebalanceByTopic = async function(t) {
    await rebalanceByTopic.call(this, t);
    if (finishing) {
      return;
    }
    const queues = [];
    for (const { messageQueue } of this.processQueueTable.values()) {
      if (messageQueue.topic === t) {
        queues.push({ brokerName: messageQueue.brokerName, queueId: messageQueue.queueId });
      }
    }
    queues.sort((a, b) => (a.brokerName === b.brokerName ? a.queueId - b.queueId :
      a.brokerName < b.brokerName ? -1 : 1));
    const key = JSON.stringify(queues);
    if (owned.get(t) !== key) {
      owned.set(t, key);
      c.emit('rebalance', { topic: t, queues });
    }
    const routed = this._topicSubscribeInfoTable.get(t);
    if (!ready && t === topic && routed && routed.length) {
      ready = true;
      c.emit('ready', { topic, group: args.group, clientId: this._mqClient.clientId, queues });
    }
  };

  consumer.subscribe(topic, args.tags, async msg => {
    // ali-ons has already moved a %RETRY% delivery back to its original topic (msg.topic) and
    // its msgId is that of the retry copy; ORIGIN_MESSAGE_ID names the message across retries.
    const origin = msg.originMessageId || null;
    const id = origin || msg.msgId;
    const n = (deliveries.get(id) || 0) + 1;
    deliveries.set(id, n);
    totalDeliveries++;
    const fail = n <= failFirst;
    const duplicate = !fail && consumed.has(id);
    const queueId = Number(msg.queueId);
    c.emit('msg', Object.assign({
      msgId: msg.msgId,
      originMsgId: origin,
      topic: msg.topic,
      tags: msg.tags || null,
      keys: msg.keys || null,
    }, c.encodeBody(msg.body), {
      queueId: Number.isNaN(queueId) ? msg.queueId : queueId,
      queueOffset: msg.queueOffset,
      commitLogOffset: msg.commitLogOffset,
      reconsumeTimes: msg.reconsumeTimes,
      storeHost: msg.storeHost,
      bornHost: msg.bornHost,
      delivery: n,
      outcome: fail ? 'fail' : 'ok',
      duplicate,
      properties: cleanProperties(msg.properties),
    }));
    if (fail) {
      throw new Error(`${DELIBERATE} ${n} of ${failFirst} for ${id}`);
    }
    consumed.add(id);
    if (expect !== undefined && consumed.size >= expect && !finishing) {
      // Let ali-ons record this message's offset (it does so after the listener returns)
      // before close() commits the offsets.
      setTimeout(() => finish(c.EXIT_OK, 'expected'), Math.max(lingerMs, 50));
    }
  });

  try {
    await consumer.ready();
  } catch (err) {
    await finish(c.EXIT_FAILED, `consumer failed to start: ${err.message}`);
    return;
  }
  if (expect === 0) {
    setTimeout(() => finish(c.EXIT_OK, 'expected'), lingerMs);
  }
}

main().catch(err => c.fail(c.EXIT_FAILED, 'unexpected error', err));
