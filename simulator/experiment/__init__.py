"""Experiments: YAML files that name a system, fio jobs, a sweep and references; their runs and reports."""
