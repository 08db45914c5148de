"""Ceph's hash functions, implemented faithfully (and compiled with numba where they are hot).

* :func:`ceph_str_hash_rjenkins` — Robert Jenkins' 1996 hash as in ``src/common/ceph_hash.cc``: object
  name -> 32-bit raw placement seed (``pg_pool_t::hash_key`` with the default ``object_hash=rjenkins``
  and an empty namespace).
* :func:`ceph_stable_mod` — ``src/include/rados.h``: folds the raw seed onto ``pg_num`` PGs such that
  growing ``pg_num`` only splits PGs (an object either stays or moves to ``ps + 2^(k-1)``).
* :func:`crush_hash32_2`, :func:`crush_hash32_3` — ``src/crush/hash.c`` (CRUSH_HASH_RJENKINS1):
  ``raw_pg_to_pps`` (pool-salted PG seed, ``FLAG_HASHPSPOOL``) and straw2's per-(x, item, r) draw.

All functions work on unsigned 32-bit arithmetic done in Python ints masked to 32 bits (scalar
versions) or numpy uint32 inside numba kernels (vector versions for whole RBD images).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "CRUSH_HASH_SEED",
    "ceph_stable_mod",
    "ceph_str_hash_rjenkins",
    "crush_hash32_2",
    "crush_hash32_3",
    "pg_num_mask",
    "rbd_object_hashes",
    "rbd_object_name",
]

_M = 0xFFFFFFFF
CRUSH_HASH_SEED = 1315423911


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - b - c) & _M
    a ^= c >> 13
    b = (b - c - a) & _M
    b ^= (a << 8) & _M
    c = (c - a - b) & _M
    c ^= b >> 13
    a = (a - b - c) & _M
    a ^= c >> 12
    b = (b - c - a) & _M
    b ^= (a << 16) & _M
    c = (c - a - b) & _M
    c ^= b >> 5
    a = (a - b - c) & _M
    a ^= c >> 3
    b = (b - c - a) & _M
    b ^= (a << 10) & _M
    c = (c - a - b) & _M
    c ^= b >> 15
    return a, b, c


def ceph_str_hash_rjenkins(data: str | bytes) -> int:
    """``ceph_str_hash_rjenkins(str, len)``: 32-bit hash of an object name."""
    k = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    length = len(k)
    a = b = 0x9E3779B9
    c = 0
    i = 0
    rem = length
    while rem >= 12:
        a = (a + int.from_bytes(k[i : i + 4], "little")) & _M
        b = (b + int.from_bytes(k[i + 4 : i + 8], "little")) & _M
        c = (c + int.from_bytes(k[i + 8 : i + 12], "little")) & _M
        a, b, c = _mix(a, b, c)
        i += 12
        rem -= 12
    c = (c + length) & _M
    # the last 11 bytes: bytes 0-3 -> a, 4-7 -> b, 8-10 -> c shifted by one byte (the first byte of c
    # is reserved for the length)
    for j in range(rem):
        byte = k[i + j]
        if j < 4:
            a = (a + (byte << (8 * j))) & _M
        elif j < 8:
            b = (b + (byte << (8 * (j - 4)))) & _M
        else:
            c = (c + (byte << (8 * (j - 7)))) & _M
    a, b, c = _mix(a, b, c)
    return c


def pg_num_mask(pg_num: int) -> int:
    """``pg_pool_t::calc_pg_masks``: (1 << cbits(pg_num - 1)) - 1."""
    if pg_num < 1:
        raise ValueError("pg_num must be >= 1")
    return (1 << (pg_num - 1).bit_length()) - 1


def ceph_stable_mod(x: int, b: int, bmask: int) -> int:
    """``ceph_stable_mod(x, b, bmask)`` from rados.h."""
    if (x & bmask) < b:
        return x & bmask
    return x & (bmask >> 1)


def crush_hash32_2(a: int, b: int) -> int:
    """``crush_hash32_rjenkins1_2(a, b)``."""
    a &= _M
    b &= _M
    h = CRUSH_HASH_SEED ^ a ^ b
    x = 231232
    y = 1232
    a, b, h = _mix(a, b, h)
    x, a, h = _mix(x, a, h)
    b, y, h = _mix(b, y, h)
    return h


def crush_hash32_3(a: int, b: int, c: int) -> int:
    """``crush_hash32_rjenkins1_3(a, b, c)`` (negative bucket ids wrap to unsigned as in C)."""
    a &= _M
    b &= _M
    c &= _M
    h = CRUSH_HASH_SEED ^ a ^ b ^ c
    x = 231232
    y = 1232
    a, b, h = _mix(a, b, h)
    c, x, h = _mix(c, x, h)
    y, a, h = _mix(y, a, h)
    b, x, h = _mix(b, x, h)
    y, c, h = _mix(y, c, h)
    return h


def rbd_object_name(image_id: str, objno: int) -> str:
    """librbd data object name (format 2 images): ``rbd_data.<id>.<016x objno>``."""
    return f"rbd_data.{image_id}.{objno:016x}"


# ----------------------------------------------------------------------------- numba, whole images
@njit(cache=True)
def _nb_mix(a, b, c):  # pragma: no cover - compiled
    a = (a - b - c) & 0xFFFFFFFF
    a ^= c >> 13
    b = (b - c - a) & 0xFFFFFFFF
    b ^= (a << 8) & 0xFFFFFFFF
    c = (c - a - b) & 0xFFFFFFFF
    c ^= b >> 13
    a = (a - b - c) & 0xFFFFFFFF
    a ^= c >> 12
    b = (b - c - a) & 0xFFFFFFFF
    b ^= (a << 16) & 0xFFFFFFFF
    c = (c - a - b) & 0xFFFFFFFF
    c ^= b >> 5
    a = (a - b - c) & 0xFFFFFFFF
    a ^= c >> 3
    b = (b - c - a) & 0xFFFFFFFF
    b ^= (a << 10) & 0xFFFFFFFF
    c = (c - a - b) & 0xFFFFFFFF
    c ^= b >> 15
    return a, b, c


@njit(cache=True)
def nb_crush_hash32_2(a, b):  # pragma: no cover - compiled
    """``crush_hash32_rjenkins1_2`` on int64 holding unsigned 32-bit values (as :func:`crush_hash32_2`)."""
    a &= 0xFFFFFFFF
    b &= 0xFFFFFFFF
    h = np.int64(CRUSH_HASH_SEED) ^ a ^ b
    x = np.int64(231232)
    y = np.int64(1232)
    a, b, h = _nb_mix(a, b, h)
    x, a, h = _nb_mix(x, a, h)
    b, y, h = _nb_mix(b, y, h)
    return h


@njit(cache=True)
def nb_crush_hash32_3(a, b, c):  # pragma: no cover - compiled
    """``crush_hash32_rjenkins1_3`` on int64 (negative ids wrap to unsigned, as :func:`crush_hash32_3`)."""
    a &= 0xFFFFFFFF
    b &= 0xFFFFFFFF
    c &= 0xFFFFFFFF
    h = np.int64(CRUSH_HASH_SEED) ^ a ^ b ^ c
    x = np.int64(231232)
    y = np.int64(1232)
    a, b, h = _nb_mix(a, b, h)
    c, x, h = _nb_mix(c, x, h)
    y, a, h = _nb_mix(y, a, h)
    b, x, h = _nb_mix(b, x, h)
    y, c, h = _nb_mix(y, c, h)
    return h


@njit(cache=True)
def _nb_rjenkins(k, length):  # pragma: no cover - compiled
    a = np.int64(0x9E3779B9)
    b = np.int64(0x9E3779B9)
    c = np.int64(0)
    i = 0
    rem = length
    while rem >= 12:
        a = (a + (k[i] | (k[i + 1] << 8) | (k[i + 2] << 16) | (k[i + 3] << 24))) & 0xFFFFFFFF
        b = (b + (k[i + 4] | (k[i + 5] << 8) | (k[i + 6] << 16) | (k[i + 7] << 24))) & 0xFFFFFFFF
        c = (c + (k[i + 8] | (k[i + 9] << 8) | (k[i + 10] << 16) | (k[i + 11] << 24))) & 0xFFFFFFFF
        a, b, c = _nb_mix(a, b, c)
        i += 12
        rem -= 12
    c = (c + length) & 0xFFFFFFFF
    for j in range(rem):
        byte = np.int64(k[i + j])
        if j < 4:
            a = (a + (byte << (8 * j))) & 0xFFFFFFFF
        elif j < 8:
            b = (b + (byte << (8 * (j - 4)))) & 0xFFFFFFFF
        else:
            c = (c + (byte << (8 * (j - 7)))) & 0xFFFFFFFF
    a, b, c = _nb_mix(a, b, c)
    return c


@njit(cache=True)
def _nb_object_hashes(prefix, n):  # pragma: no cover - compiled
    plen = prefix.shape[0]
    buf = np.empty(plen + 16, dtype=np.int64)
    for i in range(plen):
        buf[i] = prefix[i]
    out = np.empty(n, dtype=np.uint32)
    hexd = np.array([48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102], dtype=np.int64)
    for objno in range(n):
        v = objno
        for d in range(16):
            buf[plen + 15 - d] = hexd[v & 15]
            v >>= 4
        out[objno] = _nb_rjenkins(buf, plen + 16)
    return out


def rbd_object_hashes(image_id: str, n_objects: int) -> np.ndarray:
    """rjenkins hashes of ``rbd_data.<id>.<016x objno>`` for objno in [0, n_objects), as uint32."""
    prefix = np.frombuffer(f"rbd_data.{image_id}.".encode("ascii"), dtype=np.uint8).astype(np.int64)
    return _nb_object_hashes(prefix, int(n_objects))
