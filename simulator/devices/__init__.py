"""Devices: one submit interface (request in, event out). The kinds are listed in one explicit
table, :data:`simulator.devices.registry.KIND_TABLE`; nothing registers itself on import."""

from simulator.devices.base import Device, Op, Request

__all__ = ["Device", "Op", "Request"]
