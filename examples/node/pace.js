#!/usr/bin/env node
// Pace a pool of workers to an API's rate through cellserver, with ioredis.
//
//   npm ci && node pace.js [host:port]
//
// The address is the first argument, else $CELLSERVER_ADDR, else
// 127.0.0.1:6379; $CELLSERVER_PASSWORD, when set, is sent with AUTH.
//
// The partner's API takes 25 calls a second from all of us together. Before
// each call, a worker asks `LB.THROTTLE api:partner 25 1s 1 MS` for the next
// free departure and sleeps the wait it answers (0: go now); when the queue
// is full (more than a second of departures ahead, the default MAXWAIT) it
// sleeps the retry time and asks again. The workers here are async loops on
// one connection; they could as well be processes on other machines sharing
// the key. The key is deleted first; the script prints one line per call, in
// the order of the calls, then how far apart they were: 40 ms, as the API
// requires (the departures are exactly that far apart; the times printed,
// taken after each worker's sleep, may come a millisecond or two closer).
'use strict';

const Redis = require('ioredis');
const { setTimeout: sleep } = require('node:timers/promises');

const KEY = 'api:partner';
const [COUNT, PERIOD] = [25, '1s']; // 25 calls a second: one every 40 ms
const [WORKERS, JOBS] = [4, 20];

// reserve resolves to [limited, limit, remaining, wait, reset_after], times
// in ms.
function reserve(redis) {
  return redis.call('LB.THROTTLE', KEY, COUNT, PERIOD, 1, 'MS');
}

// worker takes jobs until none is left, waiting for a departure before each
// call.
async function worker(redis, name, jobs, start, calls) {
  for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
    let waited = 0;
    let limited;
    let wait;
    for (;;) {
      [limited, , , wait] = await reserve(redis);
      if (!limited) {
        break;
      }
      if (wait < 0) { // a quantity the queue can never hold
        throw new Error(`${KEY}: the call can never be reserved`);
      }
      await sleep(wait); // queue full: come back when a place frees
      waited += wait;
    }
    await sleep(wait);
    waited += wait;
    // Here the worker would call the API; it notes when it did.
    calls.push({ at: performance.now() - start, job, name, waited });
  }
}

// parseAddr splits "host:port" (or "[v6]:port", or ":port").
function parseAddr(addr) {
  const i = addr.lastIndexOf(':');
  const host = addr.slice(0, i).replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { host, port: Number(addr.slice(i + 1)) };
}

async function main() {
  const addr = process.argv[2] || process.env.CELLSERVER_ADDR || '127.0.0.1:6379';
  const redis = new Redis({
    ...parseAddr(addr),
    password: process.env.CELLSERVER_PASSWORD || undefined,
    lazyConnect: true,
    connectTimeout: 5000,
    commandTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null, // fail at once instead of reconnecting forever
  });
  // ioredis reports connection errors as events; the command that fails
  // then rejects with a plainer "Connection is closed."
  let connError;
  redis.on('error', (err) => { connError = err; });
  try {
    await redis.connect();
    await redis.del(KEY);
    console.log(`reset ${KEY}`);
    const jobs = Array.from({ length: JOBS }, (_, i) => i + 1);
    const calls = [];
    const start = performance.now();
    const workers = Array.from({ length: WORKERS }, (_, i) => worker(redis, i + 1, jobs, start, calls));
    await Promise.all(workers);
    calls.sort((a, b) => a.at - b.at);
    calls.forEach(({ at, job, name, waited }, i) => {
      console.log(`call ${i + 1}: job ${job} by worker ${name} at +${Math.round(at)} ms, after waiting ${waited} ms`);
    });
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i].at);
    const span = calls[calls.length - 1].at - calls[0].at;
    console.log(`${calls.length} calls by ${WORKERS} workers: ${Math.round(span)} ms ` +
      `from first to last, closest ${Math.round(Math.min(...gaps))} ms apart`);
    await redis.quit();
  } catch (err) {
    redis.disconnect();
    throw new Error(`${addr}: ${(connError || err).message}`);
  }
}

main().catch((err) => {
  console.error(`pace.js: ${err.message}`);
  process.exitCode = 1;
});
