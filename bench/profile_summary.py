#!/usr/bin/python3
"""Summarize a perf profile of actd (bench/compare.sh --profile).

    perf script -i FILE.data -F comm,tid,ip,sym,dso | profile_summary.py [TOP]

Reads the samples (with call graphs) and prints, for actd's main thread:
  - actd's own functions, inclusive: % of samples with the function on
    the stack;
  - actd's functions by "own" cost: each sample charged to the nearest
    actd function on its stack, so the library calls a function makes
    directly (SQLite, jansson, CZMQ, malloc) count as its own;
  - the library calls made from actd, charged to the first library
    function below actd's code (sqlite3_step, json_dumps, zmsg_send...);
  - leaf functions (where the CPU was).
Uses only the standard library.
"""
import collections
import sys


def read(stream):
    samples, current = [], None
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            if current:
                samples.append(current)
            current = None
            continue
        if not line[0].isspace():
            current = {"comm": line.split()[0], "frames": []}
            continue
        parts = line.strip().split(None, 1)
        if current is None or len(parts) < 2:
            continue
        symbol, _, dso = parts[1].rpartition(" (")
        current["frames"].append((symbol, dso.rstrip(")").split("/")[-1]))
    if current:
        samples.append(current)
    return samples


def show(title, counter, total, top):
    print(f"\n-- {title} --")
    for name, count in counter.most_common(top):
        print(f"{100.0 * count / total:6.1f}%  {name}")


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    samples = read(sys.stdin)
    if not samples:
        print("no samples")
        return
    threads = collections.Counter(s["comm"] for s in samples)
    print(f"{len(samples)} samples; by thread: " +
          ", ".join(f"{name} {100.0 * n / len(samples):.1f}%" for name, n in threads.most_common()))
    main_thread = [s for s in samples if s["comm"] == "actd"]
    if not main_thread:
        return
    inclusive, own, library, leaf = (collections.Counter() for _ in range(4))
    for sample in main_thread:
        frames = sample["frames"]
        seen = set()
        for symbol, dso in frames:
            if dso == "actd" and symbol not in seen:
                inclusive[symbol] += 1
                seen.add(symbol)
        own[next((s for s, d in frames if d == "actd"), "(outside actd's code)")] += 1
        #  The library function actd called: the frame just below the
        #  nearest actd frame
        for i, (symbol, dso) in enumerate(frames):
            if dso == "actd":
                if i > 0:
                    called, called_dso = frames[i - 1]
                    library[f"{called} [{called_dso}] from {symbol}"] += 1
                break
        if frames:
            leaf[f"{frames[0][0]} [{frames[0][1]}]"] += 1
    total = len(main_thread)
    print(f"main thread: {total} samples; percentages below are of those")
    show("actd functions, inclusive", inclusive, total, top)
    show("actd functions, own cost (with the library calls they make directly)", own,
         total, top)
    show("library calls made by actd's code (inclusive)", library, total, top)
    show("leaf functions", leaf, total, top)


if __name__ == "__main__":
    main()
