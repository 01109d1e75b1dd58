# SPDX-License-Identifier: GPL-2.0-only
"""pywait: Python threads that wait in named functions, for the checks of
Python frames in offcpu's stacks (tests/integration/test_unwind_python.sh).

    python3 pywait.py ROUNDS MS OUT.json

Each of ROUNDS rounds, one thread per kind of wait blocks in its own
function while the main thread (in py_release, the waker) lets them go
after MS ms:

    py_sleep        time.sleep(MS)
    py_lock_wait    a threading.Lock the main thread holds
    py_queue_get    queue.Queue.get() of an empty queue
    py_recv         socket.recv() of a socket pair's other end
    py_child_wait   subprocess.Popen(["sleep", MS]).wait()
    py_spin         spins for the round's length, on the CPU

Each thread measures its own calls (CLOCK_MONOTONIC around the wait;
thread CPU time around the spin) and writes them to OUT.json, with its
native thread id: {"funcs": {name: {"tid", "ns"}}}.
"""
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time

ROUNDS = int(sys.argv[1])
SECS = int(sys.argv[2]) / 1000.0
go = threading.Barrier(7)  # the six threads and the main one, at each round
held = threading.Lock()
items = queue.Queue()
here, there = socket.socketpair()
spent = {}


def py_sleep():
    time.sleep(SECS)


def py_lock_wait():
    held.acquire()
    held.release()


def py_queue_get():
    items.get()


def py_recv():
    here.recv(1)


def py_child_wait(child):
    child.wait()


def py_spin(until):
    n = 0
    while time.monotonic() < until:
        n += 1
    return n


def worker(name, each):
    spent[name] = {"tid": threading.get_native_id(), "ns": 0}
    for _ in range(ROUNDS):
        go.wait()
        spent[name]["ns"] += each()


def timed(fn, *args):
    def each():
        t0 = time.monotonic_ns()
        fn(*args)
        return time.monotonic_ns() - t0
    return each


def child_each():
    child = subprocess.Popen(["sleep", str(SECS)])
    t0 = time.monotonic_ns()
    py_child_wait(child)
    return time.monotonic_ns() - t0


def spin_each():
    t0 = time.thread_time_ns()
    py_spin(time.monotonic() + SECS)
    return time.thread_time_ns() - t0


def py_release():
    """The waker: lets every waiter go, MS ms into the round."""
    time.sleep(SECS)
    held.release()
    items.put(1)
    there.send(b"x")


def main():
    threads = [threading.Thread(target=worker, args=a) for a in (
        ("py_sleep", timed(py_sleep)), ("py_lock_wait", timed(py_lock_wait)),
        ("py_queue_get", timed(py_queue_get)), ("py_recv", timed(py_recv)),
        ("py_child_wait", child_each), ("py_spin", spin_each))]
    for t in threads:
        t.start()
    for _ in range(ROUNDS):
        held.acquire()
        go.wait()
        py_release()
        time.sleep(0.05)  # every waiter through before the next round
    for t in threads:
        t.join()
    with open(sys.argv[3], "w") as f:
        json.dump({"pid": os.getpid(), "funcs": spent}, f)


main()
