#!/usr/bin/env python3
"""Pace a pool of workers to an API's rate through cellserver, with redis-py.

    python3 pace.py [host:port]

The address is the first argument, else $CELLSERVER_ADDR, else 127.0.0.1:6379;
$CELLSERVER_PASSWORD, when set, is sent with AUTH.

The partner's API takes 25 calls a second from all of us together. Before each
call, a worker asks `LB.THROTTLE api:partner 25 1s 1 MS` for the next free
departure and sleeps the wait it answers (0: go now); when the queue is full
(more than a second of departures ahead, the default MAXWAIT) it sleeps the
retry time and asks again. The workers here are threads; they could as well
be processes on other machines sharing the key. The key is deleted first;
the script prints one line per call, in the order of the calls, then how far
apart they were: 40 ms, as the API requires (the departures are exactly that
far apart; the times printed, taken after each worker's sleep, may come a
millisecond or two closer).
"""

import os
import queue
import sys
import threading
import time

import redis

KEY = "api:partner"
COUNT, PERIOD = 25, "1s"  # 25 calls a second: one every 40 ms
WORKERS, JOBS = 4, 20


def reserve(r):
    """Returns [limited, limit, remaining, wait, reset_after], times in ms."""
    return r.execute_command("LB.THROTTLE", KEY, COUNT, PERIOD, 1, "MS")


def worker(r, name, jobs, start, calls, lock):
    """Takes jobs until none is left, waiting for a departure before each call."""
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        waited = 0
        while True:
            limited, _, _, wait, _ = reserve(r)
            if not limited:
                break
            if wait < 0:  # a quantity the queue can never hold
                raise RuntimeError(f"{KEY}: the call can never be reserved")
            time.sleep(wait / 1000)  # queue full: come back when a place frees
            waited += wait
        time.sleep(wait / 1000)
        waited += wait
        # Here the worker would call the API; it notes when it did.
        at = time.monotonic() - start
        with lock:
            calls.append((at, job, name, waited))


def parse_addr(addr):
    """Splits "host:port" (or "[v6]:port", or ":port") into host and port."""
    host, _, port = addr.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def main():
    addr = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CELLSERVER_ADDR") or "127.0.0.1:6379"
    host, port = parse_addr(addr)
    password = os.environ.get("CELLSERVER_PASSWORD") or None
    # One client for all the threads: redis-py gives each command a
    # connection of its pool.
    r = redis.Redis(host=host, port=port, password=password, socket_timeout=5, socket_connect_timeout=5)
    try:
        r.delete(KEY)
        print(f"reset {KEY}")
        jobs = queue.Queue()
        for j in range(1, JOBS + 1):
            jobs.put(j)
        calls, lock, errors = [], threading.Lock(), []

        def run(name):
            try:
                worker(r, name, jobs, start, calls, lock)
            except Exception as e:  # reported by the main thread
                errors.append(e)

        start = time.monotonic()
        threads = [threading.Thread(target=run, args=(w,)) for w in range(1, WORKERS + 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        calls.sort()
        for i, (at, job, name, waited) in enumerate(calls, 1):
            print(f"call {i}: job {job} by worker {name} at +{at * 1000:.0f} ms, after waiting {waited} ms")
        gaps = [b[0] - a[0] for a, b in zip(calls, calls[1:])]
        print(f"{len(calls)} calls by {WORKERS} workers: {(calls[-1][0] - calls[0][0]) * 1000:.0f} ms "
              f"from first to last, closest {min(gaps) * 1000:.0f} ms apart")
    except redis.RedisError as e:
        sys.exit(f"pace.py: {addr}: {e}")
    finally:
        r.close()


if __name__ == "__main__":
    main()
