'use strict';

// Send N messages with the real ali-ons producer and report each send result as a JSON line.

const { Producer, Message } = require('ali-ons');
const c = require('./lib/common');

const USAGE = `usage: node produce.js --namesrv HOST:PORT --topic T --count N [options]
  --tags TagA[,TagB...]   tag of each message; a comma list is used round-robin
  --keys PREFIX           message i gets the key PREFIX-i
  --body TEXT             body template, "{i}" is replaced by the index (default "body-{i}")
  --body-size B           pad (with ".") or cut the body to exactly B bytes
  --delay-level L         set the DELAY property (delay level L, 0 = none)
  --group PG              producer group (default longboat-peer-producer)
  --timeout-ms MS         give up and exit 3 after MS milliseconds (default 30000)
  --access-key K --secret-key S   sign requests like Aliyun ONS (brokers ignore the fields)
  --verbose               ali-ons info logs on stderr
stdout: {"event":"sent","i":..,"msgId":..,"queueId":..,"queueOffset":..,...} per message,
        then {"event":"done","sent":N}; {"event":"error",...} on failure.`;

function buildBody(template, i, size) {
  let body = Buffer.from(template.split('{i}').join(String(i)), 'utf8');
  if (size !== undefined) {
    if (body.length >= size) {
      body = body.subarray(0, size);
    } else {
      body = Buffer.concat([ body, Buffer.alloc(size - body.length, '.') ]);
    }
  }
  return body;
}

async function main() {
  const args = c.parseCommandLine({
    topic: { type: 'string' },
    count: { type: 'string', default: '1' },
    tags: { type: 'string' },
    keys: { type: 'string' },
    body: { type: 'string', default: 'body-{i}' },
    'body-size': { type: 'string' },
    'delay-level': { type: 'string' },
    group: { type: 'string', default: 'longboat-peer-producer' },
  }, USAGE);
  if (!args.topic) {
    process.stderr.write(`[produce.js] usage error: --topic is required\n${USAGE}\n`);
    process.exit(c.EXIT_USAGE);
  }
  const count = c.intOption(args, 'count', USAGE);
  const timeoutMs = c.intOption(args, 'timeout-ms', USAGE);
  const bodySize = c.intOption(args, 'body-size', USAGE);
  const delayLevel = c.intOption(args, 'delay-level', USAGE);
  const tags = args.tags ? args.tags.split(',').map(t => t.trim()).filter(Boolean) : [];

  let producer = null;
  const shutdown = async () => {
    // close() unregisters the producer group (UNREGISTER_CLIENT) and closes its connections.
    if (producer) {
      const p = producer;
      producer = null;
      await c.withTimeout(p.close(), 5000, 'producer.close()');
    }
    await c.withTimeout(c.closeDefaultProducer(Producer), 5000, 'inner producer close()');
  };

  c.armDeadline(timeoutMs, () => {
    c.fail(c.EXIT_TIMEOUT, `timed out after ${timeoutMs} ms`);
  });

  const opts = c.clientOptions(args);
  const problems = await c.checkNameServers(opts.nameSrv, Math.min(2000, timeoutMs));
  if (problems.length) {
    c.fail(c.EXIT_FAILED, `cannot connect to name server (${problems.join('; ')})`);
    return;
  }

  producer = new Producer(Object.assign(opts, { producerGroup: args.group }));
  producer.on('error', err => {
    c.log('ali-ons error:', err.stack || err);
    c.emit('error', Object.assign({ fatal: false }, c.describeError(err)));
  });

  let sent = 0;
  try {
    await producer.ready();
    c.emit('started', { group: args.group, clientId: producer._mqClient.clientId });
    for (let i = 0; i < count; i++) {
      const msg = new Message(args.topic, tags.length ? tags[i % tags.length] : null,
        buildBody(args.body, i, bodySize));
      if (args.keys) {
        msg.keys = [ `${args.keys}-${i}` ];
      }
      if (delayLevel) {
        msg.delayTimeLevel = delayLevel;
      }
      const result = await producer.send(msg);
      const queueId = Number(result.messageQueue.queueId);
      c.emit('sent', {
        i,
        msgId: result.msgId,
        topic: args.topic,
        brokerName: result.messageQueue.brokerName,
        queueId: Number.isNaN(queueId) ? result.messageQueue.queueId : queueId,
        queueOffset: result.queueOffset,
        sendStatus: result.sendStatus,
        tags: msg.tags || null,
        keys: msg.keys || null,
      });
      sent++;
    }
  } catch (err) {
    c.log('send failed:', err.stack || err);
    c.emit('error', Object.assign({ fatal: true, sent }, c.describeError(err)));
    await shutdown().catch(e => c.log('close failed:', e.message));
    c.exit(c.EXIT_FAILED);
    return;
  }

  c.emit('done', { sent });
  try {
    await shutdown();
  } catch (err) {
    c.fail(c.EXIT_FAILED, 'closing the producer failed', err);
    return;
  }
  c.exit(c.EXIT_OK);
}

main().catch(err => c.fail(c.EXIT_FAILED, 'unexpected error', err));
