"""Moved: the fio JSON writer is :mod:`simulator.fio.writer`, beside the readers. This name stays
for existing imports."""

from simulator.fio.writer import FIO_FORMAT_VERSION, jsonable, lat_object, to_fio_json

__all__ = ["FIO_FORMAT_VERSION", "jsonable", "lat_object", "to_fio_json"]
