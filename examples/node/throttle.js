#!/usr/bin/env node
// Rate-limit through cellserver from Node.js with ioredis, and answer as
// HTTP would.
//
//   npm ci && node throttle.js [host:port]
//
// The address is the first argument, else $CELLSERVER_ADDR, else
// 127.0.0.1:6379; $CELLSERVER_PASSWORD, when set, is sent with AUTH.
//
// The scenario is redis-cell's README: `CL.THROTTLE user:42 15 30 60` allows
// 16 requests at once, then 30 a minute, so the 17th request of a burst is
// limited. The key is deleted first, so that every run prints the same
// lines: one per step, with the reply and the HTTP answer it maps to.
'use strict';

const Redis = require('ioredis');

const KEY = 'user:42';
const [MAX_BURST, COUNT, PERIOD] = [15, 30, 60]; // 16 at once, then 30 per 60 s

// throttle resolves to CL.THROTTLE's reply:
// [limited, limit, remaining, retry_after, reset_after].
function throttle(redis, key, quantity = 1) {
  return redis.call('CL.THROTTLE', key, MAX_BURST, COUNT, PERIOD, quantity);
}

// httpAnswer returns the HTTP status and headers that answer a request given
// this reply.
function httpAnswer([limited, limit, remaining, retryAfter, resetAfter]) {
  const headers = [
    ['X-RateLimit-Limit', limit],
    ['X-RateLimit-Remaining', remaining],
    ['X-RateLimit-Reset', resetAfter], // seconds until the limit is full again
  ];
  if (!limited) {
    return { status: 200, headers };
  }
  if (retryAfter >= 0) { // -1: no wait helps (a quantity above the limit)
    headers.push(['Retry-After', retryAfter]);
  }
  return { status: 429, headers };
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
    let allowed = 0;
    let limited = 0;
    for (let i = 1; i <= 17; i++) {
      const reply = await throttle(redis, KEY);
      const { status, headers } = httpAnswer(reply);
      if (status === 200) {
        allowed++;
      } else {
        limited++;
      }
      const shown = headers.map(([name, value]) => `${name}: ${value}`).join(', ');
      console.log(`request ${i}: [${reply.join(', ')}] -> ${status} ${shown}`);
    }
    console.log(`${allowed} allowed, ${limited} limited`);
    await redis.quit();
  } catch (err) {
    redis.disconnect();
    throw new Error(`${addr}: ${(connError || err).message}`);
  }
}

main().catch((err) => {
  console.error(`throttle.js: ${err.message}`);
  process.exitCode = 1;
});
