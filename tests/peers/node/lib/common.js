'use strict';

// Shared plumbing for the ali-ons test peer scripts: argument parsing, the JSON-lines event
// protocol on stdout, ali-ons client options for an open-source name server, a preflight check
// of the name server address and a hard deadline so that every script exits by itself.

const net = require('net');
const { parseArgs } = require('util');

// Exit codes understood by tests/peers/ali_ons.py.
const EXIT_OK = 0;
const EXIT_FAILED = 1; // the client reported an error (send failed, cannot connect, ...)
const EXIT_USAGE = 2; // bad command line
const EXIT_TIMEOUT = 3; // --timeout-ms elapsed before the script finished its job

const SCRIPT = require('path').basename(process.argv[1] || 'peer');

let exiting = false;

/** Print one event as a single JSON line on stdout. */
function emit(event, fields) {
  if (exiting) {
    return;
  }
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

/** Print a human-readable line on stderr. */
function log(...parts) {
  process.stderr.write(`[${SCRIPT}] ${parts.join(' ')}\n`);
}

/** Describe an error raised by ali-ons (it sets `name`, and `code` for broker response codes). */
function describeError(err) {
  if (!(err instanceof Error)) {
    return { name: 'Error', message: String(err) };
  }
  const out = { name: err.name, message: err.message };
  if (err.code !== undefined) {
    out.code = err.code;
  }
  return out;
}

/**
 * Exit once stdout has been flushed. ali-ons keeps timers (30 s route / heartbeat loops of the
 * internal producer's client) alive after close(), so the scripts always exit explicitly.
 */
function exit(code) {
  if (exiting) {
    return;
  }
  exiting = true;
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
  // Belt and braces: if stdout never drains (reader gone), leave anyway.
  setTimeout(() => process.exit(code), 1000).unref();
}

/** Report a fatal error on stderr and stdout, then exit with `code`. */
function fail(code, message, err) {
  log('error:', message + (err ? `: ${err.stack || err}` : ''));
  emit('error', Object.assign({ fatal: true, message }, err ? { cause: describeError(err) } : {}));
  exit(code);
}

/** Parse argv with node's strict parser; on a usage error exit 2 with the usage text. */
function parseCommandLine(options, usage) {
  const spec = Object.assign({
    namesrv: { type: 'string' },
    'timeout-ms': { type: 'string', default: '30000' },
    'access-key': { type: 'string' },
    'secret-key': { type: 'string' },
    verbose: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  }, options);
  let values;
  try {
    ({ values } = parseArgs({ options: spec, allowPositionals: false, strict: true }));
  } catch (err) {
    process.stderr.write(`[${SCRIPT}] usage error: ${err.message}\n${usage}\n`);
    process.exit(EXIT_USAGE);
  }
  if (values.help) {
    process.stdout.write(usage + '\n');
    process.exit(EXIT_OK);
  }
  if (!values.namesrv) {
    process.stderr.write(`[${SCRIPT}] usage error: --namesrv host:port is required\n${usage}\n`);
    process.exit(EXIT_USAGE);
  }
  return values;
}

/** Parse an integer option, exiting with a usage error when it is not a non-negative integer. */
function intOption(values, name, usage) {
  const raw = values[name];
  if (raw === undefined) {
    return undefined;
  }
  if (!/^\d+$/.test(raw)) {
    process.stderr.write(`[${SCRIPT}] usage error: --${name} must be a non-negative integer\n${usage}\n`);
    process.exit(EXIT_USAGE);
  }
  return Number(raw);
}

/** "a:1,b:2" or "a:1;b:2" -> ["a:1", "b:2"] */
function nameServerList(namesrv) {
  return namesrv.split(/[;,]/).map(s => s.trim()).filter(Boolean);
}

/** ali-ons' default logger prints warn/error with console.*; route them to stderr, tagged. */
function makeLogger(verbose) {
  return {
    debug(...args) {
      if (verbose) {
        log('debug', require('util').format(...args));
      }
    },
    info(...args) {
      if (verbose) {
        log('info', require('util').format(...args));
      }
    },
    warn(...args) {
      log('warn', require('util').format(...args));
    },
    error(...args) {
      log('error', require('util').format(...args));
    },
  };
}

/**
 * Options every ali-ons client needs against an open-source RocketMQ name server.
 *
 * - `nameSrv` (array of "host:port"): without it ali-ons fetches the name-server list over HTTP
 *   from Aliyun's `onsAddr` endpoint.
 * - `httpclient`: RemotingClient asserts that it is present even when `nameSrv` is given; it is
 *   only used for the `onsAddr` lookup, so a stub that refuses to be called is enough.
 * - `accessKeyId`/`accessKeySecret`: optional. When both are set, every request is signed and its
 *   extFields gain `AccessKey`, `Signature` and `OnsChannel`; open-source brokers ignore them.
 */
function clientOptions(values) {
  const opts = {
    nameSrv: nameServerList(values.namesrv),
    httpclient: {
      request() {
        throw new Error('the test peer never fetches name servers over HTTP; pass --namesrv');
      },
    },
    logger: makeLogger(values.verbose),
  };
  if (values['access-key'] && values['secret-key']) {
    opts.accessKeyId = values['access-key'];
    opts.accessKeySecret = values['secret-key'];
  }
  return opts;
}

/**
 * Try a TCP connection to each name server. ali-ons itself starts without touching the network
 * and a push consumer only reports connection problems as `error` events while it keeps retrying,
 * so without this check an unreachable name server would only show up as a timeout.
 */
function checkNameServers(addrs, timeoutMs) {
  const tryOne = addr => new Promise(resolve => {
    const idx = addr.lastIndexOf(':');
    const host = addr.slice(0, idx);
    const port = Number(addr.slice(idx + 1));
    if (idx <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
      resolve(`${addr}: not a host:port address`);
      return;
    }
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`${addr}: connect timed out after ${timeoutMs} ms`);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.end();
      socket.destroy();
      resolve(null);
    });
    socket.once('error', err => {
      clearTimeout(timer);
      resolve(`${addr}: ${err.code || err.message}`);
    });
  });
  return Promise.all(addrs.map(tryOne)).then(results => {
    const problems = results.filter(Boolean);
    // ali-ons fails over between name servers, so one reachable address is enough.
    return problems.length === addrs.length ? problems : [];
  });
}

/** Arm the --timeout-ms deadline: on expiry call onTimeout() (which should exit). */
function armDeadline(timeoutMs, onTimeout) {
  const timer = setTimeout(onTimeout, timeoutMs);
  return () => clearTimeout(timer);
}

/** Resolve `promise`, or reject after `ms` milliseconds. */
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Close the internal CLIENT_INNER_PRODUCER that every ali-ons producer/consumer creates. */
async function closeDefaultProducer(Producer) {
  const inner = Producer.defaultProducer;
  if (inner) {
    Producer.defaultProducer = null;
    await inner.close();
  }
}

/** Encode a message body: UTF-8 text when it round-trips, base64 otherwise. */
function encodeBody(body) {
  if (!body) {
    return { body: '', bodyEncoding: 'utf8', bodySize: 0 };
  }
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const text = buf.toString('utf8');
  if (Buffer.from(text, 'utf8').equals(buf)) {
    return { body: text, bodyEncoding: 'utf8', bodySize: buf.length };
  }
  return { body: buf.toString('base64'), bodyEncoding: 'base64', bodySize: buf.length };
}

module.exports = {
  EXIT_OK,
  EXIT_FAILED,
  EXIT_USAGE,
  EXIT_TIMEOUT,
  emit,
  log,
  exit,
  fail,
  describeError,
  parseCommandLine,
  intOption,
  clientOptions,
  checkNameServers,
  armDeadline,
  withTimeout,
  closeDefaultProducer,
  encodeBody,
};
