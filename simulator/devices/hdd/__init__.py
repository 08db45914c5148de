"""Hard disk drives (device kind ``hdd``).

One mechanism, parameterised by profiles (``models/hdd/*.yaml``):

* **Geometry** — capacity, heads, zones (OD/ID media rates, OD/ID sectors per track, or an explicit
  table), cylinders derived; serpentine or cylinder-major LBA layout; track and cylinder skew;
  optional 512e physical sectors with a read-modify-write penalty.
* **Seek** — ``three_point`` (t_track + alpha(d-1) + beta sqrt(d-1) through the datasheet figures),
  ``ruemmler_wilkes`` (sqrt below a boundary, linear above; explicit or derived from the three
  figures with a smooth join) or a measured ``table``; read/write settle, head switch.
* **Rotation** — the platter's angle at time t is (phase0 + t rpm/60) mod 1 with phase0 drawn
  from the component's stream; rotational delay = time until the target sector's start angle is
  under the head after overhead + seek; media transfer track by track with switches and skew.
* **Queue** — NCQ/TCQ depth (more commands wait in a host-side FIFO), FIFO or SPTF (seek +
  rotational delay from the real angle, chosen by a numba kernel), aged SPTF weight, hard aging
  guard (max_age, max_skips).
* **Caches** — write cache ``off`` / ``volatile`` (ack from DRAM, FLUSH waits for destage, FUA to
  media or write+FLUSH when FUA is unsupported, writes wait when full) / ``persistent`` (ack once
  in non-volatile cache, FLUSH cheap); destage through the same scheduler (idle priority or mixed);
  segmented read look-ahead.
* **Dual actuator** (MACH.2) — two mechanisms on one spindle sharing the host link, exposed as
  LUNs (``<name>.lun0``/``lun1``) or as the two halves of one LBA range.

Config sections (``HDDConfig``): ``geometry`` (capacity, sector_size, physical_sector_size,
rmw_revolutions, heads, layout, zones{n_zones, od_rate, id_rate, od/id_sectors_per_track, table},
track_skew, cylinder_skew), ``rotation`` (rpm), ``seek`` (model, single_track, average, full_stroke,
write_*, average_weighting, rw_*, table, read_settle, write_settle, head_switch, write_head_switch),
``interface`` (protocol, link_rate, link_efficiency, read/write/cache_hit/flush overheads),
``queue`` (depth, policy, max_age, age_weight, max_skips), ``cache`` (buffer_size, write_cache,
write_cache_size, persistent_size, persistent_ack, destage, high_watermark, destage_window,
destage_merge, fua_supported, read_lookahead, segments, readahead), ``actuators`` (count,
exposure, split_cache). Every field documents its unit and default (``simrun schema --kind hdd``).

Per IO: one numba call at admission, one at dispatch (SPTF choice + whole service time), one
scheduled completion event; ``simrun bench`` (case hdd-sptf-qd32) measures simulated IOs per wall second.
"""

from .config import HDDConfig, derive
from .drive import HDD, DualActuatorHDD, Link, build_hdd

__all__ = ["HDD", "DualActuatorHDD", "HDDConfig", "Link", "build_hdd", "derive"]
