"""What a CUDA allocator trace says was alive at its peak (shared by the replay tools here).

The trace is torch.cuda.memory._snapshot()["device_traces"][device] after
torch.cuda.memory._record_memory_history: one entry per allocation and free, in order.
"""

from __future__ import annotations


def alive_at_peak(traces: list) -> tuple[int, int, list]:
    """(the highest allocated total, the index of the allocation that reached it, the allocations
    alive then), replaying the trace's allocations and frees in order."""
    size: dict[int, int] = {}
    cur = peak = 0
    peak_at = -1
    for i, e in enumerate(traces):
        if e["action"] == "alloc":
            size[e["addr"]] = e["size"]
            cur += e["size"]
            if cur > peak:
                peak, peak_at = cur, i
        elif e["action"] in ("free_requested", "free_completed") and e["addr"] in size:
            cur -= size.pop(e["addr"])
    alive: dict[int, dict] = {}
    for e in traces[: peak_at + 1]:
        if e["action"] == "alloc":
            alive[e["addr"]] = e
        elif e["action"] in ("free_requested", "free_completed"):
            alive.pop(e["addr"], None)
    return peak, peak_at, list(alive.values())
