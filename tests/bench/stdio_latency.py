"""Rough stdio figures for `paddock serve`: time to the `initialize` reply, sequential
`tools/call` and `ping` latency, and pipelined `tools/call` throughput.

Usage: python3 tests/bench/stdio_latency.py target/release/paddock PLUGINS_DIR [TOOL]
PLUGINS_DIR must serve TOOL (default `text_echo`, from sample-plugins/dist/text.wasm) taking
`{"text": ...}`. Run it twice so the compiled-plugin cache is warm. These are indicative numbers
from a Python driver, not benchmarks against a native baseline.
"""

import json
import statistics
import subprocess
import sys
import time


def main(binary: str, plugins: str, tool: str) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    started = time.perf_counter()
    proc = subprocess.Popen([binary, "serve", plugins], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)

    def ask(message: dict) -> bytes:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        return proc.stdout.readline()

    ask(init)
    init_ms = (time.perf_counter() - started) * 1000
    calls, pings = [], []
    for i in range(1, 3001):
        t = time.perf_counter()
        ask({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "hello"}}})
        calls.append(time.perf_counter() - t)
    for i in range(1, 3001):
        t = time.perf_counter()
        ask({"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"})
        pings.append(time.perf_counter() - t)
    proc.stdin.close()
    proc.wait()
    calls.sort()

    n = 20000
    lines = [json.dumps(init)] + [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                              "params": {"name": tool, "arguments": {"text": "hello"}}}) for i in range(1, n + 1)]
    payload = ("\n".join(lines) + "\n").encode()
    t = time.perf_counter()
    out = subprocess.run([binary, "serve", plugins], input=payload, capture_output=True, check=True).stdout
    elapsed = time.perf_counter() - t
    answered = out.count(b'"id":') - 1

    print(f"initialize reply {init_ms:.1f} ms")
    print(f"sequential tools/call p50 {statistics.median(calls) * 1e6:.0f} us, p99 {calls[int(len(calls) * 0.99)] * 1e6:.0f} us")
    print(f"sequential ping p50 {statistics.median(pings) * 1e6:.0f} us")
    print(f"pipelined {answered} tools/call in {elapsed:.2f} s including start-up: {answered / elapsed:.0f} calls/s")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else "text_echo")
