#!/usr/bin/env python3
"""Rate-limit through cellserver from Python with redis-py, and answer as HTTP would.

    python3 throttle.py [host:port]

The address is the first argument, else $CELLSERVER_ADDR, else 127.0.0.1:6379;
$CELLSERVER_PASSWORD, when set, is sent with AUTH. Debian's python3-redis (or
`pip install redis`) provides redis-py.

The scenario is redis-cell's README: `CL.THROTTLE user:42 15 30 60` allows 16
requests at once, then 30 a minute, so the 17th request of a burst is limited.
The key is deleted first, so that every run prints the same lines: one per
step, with the reply and the HTTP answer it maps to.
"""

import os
import sys

import redis

KEY = "user:42"
MAX_BURST, COUNT, PERIOD = 15, 30, 60  # 16 at once, then 30 per 60 s


def throttle(r, key, quantity=1):
    """Returns CL.THROTTLE's reply: [limited, limit, remaining, retry_after, reset_after]."""
    return r.execute_command("CL.THROTTLE", key, MAX_BURST, COUNT, PERIOD, quantity)


def http_answer(reply):
    """Returns the HTTP status and headers that answer a request given this reply."""
    limited, limit, remaining, retry_after, reset_after = reply
    headers = [
        ("X-RateLimit-Limit", limit),
        ("X-RateLimit-Remaining", remaining),
        ("X-RateLimit-Reset", reset_after),  # seconds until the limit is full again
    ]
    if not limited:
        return 200, headers
    if retry_after >= 0:  # -1: no wait helps (a quantity above the limit)
        headers.append(("Retry-After", retry_after))
    return 429, headers


def parse_addr(addr):
    """Splits "host:port" (or "[v6]:port", or ":port") into host and port."""
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def main():
    addr = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CELLSERVER_ADDR") or "127.0.0.1:6379"
    host, port = parse_addr(addr)
    password = os.environ.get("CELLSERVER_PASSWORD") or None
    r = redis.Redis(host=host, port=port, password=password, socket_timeout=5, socket_connect_timeout=5)
    try:
        r.delete(KEY)
        print(f"reset {KEY}")
        allowed = limited = 0
        for i in range(1, 18):
            reply = throttle(r, KEY)
            status, headers = http_answer(reply)
            if status == 200:
                allowed += 1
            else:
                limited += 1
            shown = ", ".join(f"{name}: {value}" for name, value in headers)
            print(f"request {i}: [{', '.join(map(str, reply))}] -> {status} {shown}")
        print(f"{allowed} allowed, {limited} limited")
    except redis.RedisError as e:
        sys.exit(f"throttle.py: {addr}: {e}")
    finally:
        r.close()


if __name__ == "__main__":
    main()
