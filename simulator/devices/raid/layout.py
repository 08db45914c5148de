"""RAID address mapping and write planning as pure functions (no simulation state).

Terms (Linux md's): a *chunk* (stripe unit) is the run of bytes a member holds before the
next member takes over; a *stripe* (row) is one chunk per member at the same member offset
``stripe * chunk``; a stripe holds ``k`` data chunks (``data_chunks``) and ``p`` parity chunks.

Layouts:

* ``jbod`` -- linear concatenation (md ``linear``): member ``i`` holds ``[i*cap, (i+1)*cap)``.
* ``0``   -- chunk ``c`` on member ``c mod n`` at row ``c div n``.
* ``1``   -- every member holds the whole volume.
* ``10``  -- md ``near`` layout with ``copies`` copies and ``n`` a multiple of ``copies``: the
  members form ``n/copies`` mirror sets ``{s*copies .. s*copies+copies-1}``; chunk ``c`` goes to set
  ``c mod sets``, row ``c div sets`` (RAID 0 over RAID 1 sets).
* ``5``   -- left-symmetric (md's default, ``ALGORITHM_LEFT_SYMMETRIC``): parity of stripe ``s`` on
  member ``pd = n-1 - (s mod n)``; data chunk ``j`` on member ``(pd + 1 + j) mod n``.
* ``6``   -- md's left-symmetric RAID 6: ``P`` on ``pd = n-1 - (s mod n)``, ``Q`` on ``(pd+1) mod n``,
  data chunk ``j`` on ``(pd + 2 + j) mod n`` (the layout ``mdadm --level=6`` creates by default).

Every mapping function works on Python ints and on numpy integer arrays alike (pure integer
arithmetic), so the tests check them over whole ranges at once.

The write planner decides, per stripe, how a parity RAID writes (see :func:`plan_stripe_write`):
read-modify-write (read old data of the written chunks and the old parity, write new data and
parity), reconstruct-write (read the data the write does not cover, compute parity, write data and
parity) or a full-stripe write (everything covered: no reads). ``policy="cheaper"`` takes the one
with fewer member reads, reconstruct on a tie (md's default ``rmw_level``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Layout",
    "MemberOp",
    "merge_ops",
    "parity_members",
    "plan_read",
    "plan_stripe_write",
    "plan_write",
    "split_chunks",
    "stripe_data_member",
]

LEVELS = ("jbod", "0", "1", "10", "5", "6")
READ, WRITE = 0, 1


@dataclass(frozen=True)
class Layout:
    """Geometry of one volume: ``level``, ``n`` members, ``chunk`` bytes, ``copies`` (RAID 10),
    ``member_bytes`` usable per member (a multiple of ``chunk``)."""

    level: str
    n: int
    chunk: int
    member_bytes: int
    copies: int = 2

    @property
    def parity(self) -> int:
        return {"5": 1, "6": 2}.get(self.level, 0)

    @property
    def data_chunks(self) -> int:
        """Data chunks per stripe (row): what one row of the volume holds, in chunks."""
        lv = self.level
        if lv in ("5", "6"):
            return self.n - self.parity
        if lv == "0":
            return self.n
        if lv == "10":
            return self.n // self.copies
        return 1

    @property
    def row_bytes(self) -> int:
        return self.data_chunks * self.chunk

    @property
    def rows(self) -> int:
        return self.member_bytes // self.chunk

    @property
    def capacity(self) -> int:
        if self.level == "jbod":
            return self.n * self.member_bytes
        return self.rows * self.row_bytes

    def mirror_set(self, idx: int) -> range:
        """Members holding copies of data position ``idx`` (RAID 1: all; RAID 10: the set)."""
        if self.level == "1":
            return range(self.n)
        return range(idx * self.copies, idx * self.copies + self.copies)


def parity_members(n: int, level: str, stripe: Any) -> tuple[Any, Any]:
    """(P member, Q member) of ``stripe``; Q is -1 for RAID 5. Left-symmetric (see module doc)."""
    pd = (n - 1) - stripe % n
    if level == "6":
        return pd, (pd + 1) % n
    return pd, pd * 0 - 1


def stripe_data_member(n: int, level: str, stripe: Any, j: Any) -> Any:
    """Member holding data chunk ``j`` (0..k-1) of ``stripe`` (RAID 5/6, left-symmetric)."""
    pd = (n - 1) - stripe % n
    return (pd + (2 if level == "6" else 1) + j) % n


def split_chunks(lay: Layout, offset: int, size: int) -> list[tuple[int, int, int, int]]:
    """The logical range as pieces within one chunk: (row, data index, offset in chunk, length).

    For RAID 1 the "row" is the chunk number and the data index 0; for JBOD the data index is the
    member and the "row"/offset are in member bytes (one piece per member touched)."""
    out = []
    if lay.level == "jbod":
        mb = lay.member_bytes
        end = offset + size
        while offset < end:
            m, o = divmod(offset, mb)
            ln = min(end - offset, mb - o)
            out.append((0, m, o, ln))
            offset += ln
        return out
    ch = lay.chunk
    k = lay.data_chunks
    end = offset + size
    while offset < end:
        c, o = divmod(offset, ch)
        ln = min(end - offset, ch - o)
        row, j = divmod(c, k)
        out.append((row, j, o, ln))
        offset += ln
    return out


@dataclass
class MemberOp:
    """One member IO of a plan. ``phase`` 0 runs first (reads of a read-modify-write), 1 after."""

    phase: int
    member: int
    op: int
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def merge_ops(ops: list[MemberOp]) -> list[MemberOp]:
    """Coalesce ops of the same phase, member and direction that touch or overlap (one member IO
    per contiguous member range, as the block layer below a RAID merges)."""
    if len(ops) <= 1:
        return ops
    ops = sorted(ops, key=lambda o: (o.phase, o.member, o.op, o.offset))
    out = [ops[0]]
    for o in ops[1:]:
        last = out[-1]
        if o.phase == last.phase and o.member == last.member and o.op == last.op and o.offset <= last.end:
            if o.end > last.end:
                last.size = o.end - last.offset
        else:
            out.append(MemberOp(o.phase, o.member, o.op, o.offset, o.size))
    return out


def _pick_mirror(candidates: range, failed: frozenset[int], load: Any) -> int:
    best = -1
    for m in candidates:
        if m in failed:
            continue
        if best < 0 or (load is not None and load(m) < load(best)):
            best = m
    if best < 0:
        raise ValueError("every copy of the data has failed")
    return best


def plan_read(
    lay: Layout, offset: int, size: int, failed: frozenset[int] = frozenset(), load: Any = None
) -> list[MemberOp]:
    """Member reads for a logical read. Mirrors: each piece to the copy with the lowest
    ``load(member)`` (first on a tie). Parity RAID with a failed member: a piece on the failed member
    is rebuilt from the same range of every surviving data chunk of the stripe and P (Q only when P
    is gone too)."""
    lv = lay.level
    ch = lay.chunk
    ops: list[MemberOp] = []
    if lv == "1":
        m = _pick_mirror(range(lay.n), failed, load)
        return [MemberOp(0, m, READ, offset, size)]
    if not failed and lv in ("5", "6", "0"):  # the common case: a read inside one chunk of a healthy volume
        c, o = divmod(offset, ch)
        if o + size <= ch:
            row, j = divmod(c, lay.data_chunks)
            m = j if lv == "0" else ((lay.n - 1) - row % lay.n + (2 if lv == "6" else 1) + j) % lay.n
            return [MemberOp(0, m, READ, row * ch + o, size)]
    for row, j, o, ln in split_chunks(lay, offset, size):
        if lv == "jbod":
            ops.append(MemberOp(0, j, READ, o, ln))
        elif lv == "0":
            ops.append(MemberOp(0, j, READ, row * ch + o, ln))
        elif lv == "10":
            ops.append(MemberOp(0, _pick_mirror(lay.mirror_set(j), failed, load), READ, row * ch + o, ln))
        else:
            m = int(stripe_data_member(lay.n, lv, row, j))
            moff = row * ch + o
            if m not in failed:
                ops.append(MemberOp(0, m, READ, moff, ln))
                continue
            p, q = parity_members(lay.n, lv, row)
            src = [int(stripe_data_member(lay.n, lv, row, i)) for i in range(lay.data_chunks) if i != j]
            src.append(int(p) if int(p) not in failed else int(q))
            for s in src:
                if s in failed or s < 0:
                    raise ValueError("too many failed members to rebuild the data")
                ops.append(MemberOp(0, s, READ, moff, ln))
    return merge_ops(ops)


def plan_stripe_write(
    lay: Layout,
    row: int,
    pieces: list[tuple[int, int, int]],
    failed: frozenset[int] = frozenset(),
    policy: str = "cheaper",
) -> tuple[list[MemberOp], str]:
    """Member IOs writing ``pieces`` [(data index, offset in chunk, length), ...] of stripe ``row``
    of a RAID 5/6; returns (ops, method) with method ``full``, ``rmw`` or ``rcw``.

    The parity range is the span [lo, hi) in chunk of all pieces. Read-modify-write reads the old
    data of each written piece and the old P (and Q) over [lo, hi); reconstruct-write reads, per
    data chunk, the part of [lo, hi) the write does not cover (one read of its span). Writes: each
    piece and P (Q) over [lo, hi). A failed member is neither read nor written: RMW is impossible
    when a written chunk is on it, reconstruct-write when it holds data that must be read; when
    both are, every survivor's uncovered range and the parity are read (rebuild, then write)."""
    n, lv, ch = lay.n, lay.level, lay.chunk
    k = lay.data_chunks
    base = row * ch
    cover: dict[int, list[int]] = {}
    for j, o, ln in pieces:
        c = cover.get(j)
        if c is None:
            cover[j] = [o, o + ln]
        else:  # pieces of one chunk are contiguous or overlapping after merging upstream
            c[0] = min(c[0], o)
            c[1] = max(c[1], o + ln)
    lo = min(c[0] for c in cover.values())
    hi = max(c[1] for c in cover.values())
    pd = (n - 1) - row % n  # left-symmetric: P of this stripe (parity_members / stripe_data_member)
    par = [pd, (pd + 1) % n] if lv == "6" else [pd]
    first = pd + (2 if lv == "6" else 1)
    members = [(first + j) % n for j in range(k)]
    writes = [MemberOp(1, members[j], WRITE, base + a, b - a) for j, (a, b) in cover.items() if members[j] not in failed]
    writes += [MemberOp(1, m, WRITE, base + lo, hi - lo) for m in par if m not in failed]
    alive_par = [m for m in par if m not in failed]
    if not alive_par:  # no parity left to keep: plain data writes
        return writes, "full"

    def rcw_reads() -> list[MemberOp]:
        """Reconstruct-write: the uncovered part of [lo, hi) of every data chunk (one read each)."""
        out = []
        for j in range(k):
            c = cover.get(j)
            if c is None:
                a, b = lo, hi
            elif c[0] <= lo and c[1] >= hi:
                continue
            else:  # read the span of what is left uncovered (one IO)
                a = lo if c[0] > lo else c[1]
                b = hi if c[1] < hi else c[0]
            out.append(MemberOp(0, members[j], READ, base + a, b - a))
        return out

    # the reconstruct-write's read count and feasibility without building it (k - fully covered chunks)
    full = [j for j, c in cover.items() if c[0] <= lo and c[1] >= hi]
    n_rcw = k - len(full)
    rcw_ok = not failed or all(members[j] not in failed for j in range(k) if j not in full)
    if rcw_ok and n_rcw == 0:
        return writes, "full"
    rmw_ok = all(members[j] not in failed for j in cover)
    n_rmw = len(cover) + len(alive_par)
    if policy == "rmw" and rmw_ok:
        use = "rmw"
    elif policy == "reconstruct" and rcw_ok:
        use = "rcw"
    elif rmw_ok and rcw_ok:
        use = "rmw" if n_rmw < n_rcw else "rcw"
    elif rmw_ok:
        use = "rmw"
    elif rcw_ok:
        use = "rcw"
    else:  # degraded: rebuild from every survivor, then write
        reads = [o for o in rcw_reads() if o.member not in failed] + [MemberOp(0, m, READ, base + lo, hi - lo) for m in alive_par]
        return reads + writes, "rebuild"
    if use == "rcw":
        return rcw_reads() + writes, use
    rmw = [MemberOp(0, members[j], READ, base + a, b - a) for j, (a, b) in cover.items()]
    rmw += [MemberOp(0, m, READ, base + lo, hi - lo) for m in alive_par]
    return rmw + writes, use


def plan_write(
    lay: Layout, offset: int, size: int, failed: frozenset[int] = frozenset(), policy: str = "cheaper"
) -> tuple[list[MemberOp], list[str]]:
    """Member IOs of a logical write; returns (merged ops, method per stripe touched)."""
    lv = lay.level
    ch = lay.chunk
    ops: list[MemberOp] = []
    methods: list[str] = []
    if lv == "1":
        return [MemberOp(1, m, WRITE, offset, size) for m in range(lay.n) if m not in failed], ["mirror"]
    pieces = split_chunks(lay, offset, size)
    if lv in ("5", "6"):
        by_row: dict[int, list[tuple[int, int, int]]] = {}
        for row, j, o, ln in pieces:
            by_row.setdefault(row, []).append((j, o, ln))
        for row, pcs in by_row.items():
            o2, m = plan_stripe_write(lay, row, pcs, failed, policy)
            ops += o2
            methods.append(m)
        return merge_ops(ops), methods
    for row, j, o, ln in pieces:
        if lv == "jbod":
            ops.append(MemberOp(1, j, WRITE, o, ln))
        elif lv == "0":
            ops.append(MemberOp(1, j, WRITE, row * ch + o, ln))
        else:  # 10
            ops += [MemberOp(1, m, WRITE, row * ch + o, ln) for m in lay.mirror_set(j) if m not in failed]
    return merge_ops(ops), ["plain"]
