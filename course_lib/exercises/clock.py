"""How long a process has waited without computing (used on both sides of the grader's boundary)."""
from __future__ import annotations

import time


class IdleClock:
    """Seconds a process has spent waiting: neither computing nor ready to compute (Linux: its state and CPU time
    in /proc; elsewhere every second counts). A busy machine slows a computation but adds no waiting."""

    def __init__(self, pid: int):
        self.path, self.idle, self.t = f"/proc/{pid}/stat", 0.0, time.monotonic()
        self.last = self._read()
        self.exact = self.last is not None

    def _read(self):
        try:
            with open(self.path) as f:
                fields = f.read().rpartition(")")[2].split()
            return fields[0], int(fields[11]) + int(fields[12])  # state, utime + stime in ticks
        except (OSError, IndexError, ValueError):
            return None

    def update(self) -> float:
        now, current = time.monotonic(), self._read()
        waited = now - self.t
        if self.exact:
            busy = current is None or self.last is None or current[1] != self.last[1] or current[0] == "R"
            waited = 0.0 if busy else waited
        self.idle += waited
        self.t, self.last = now, current
        return self.idle
