"""Configuration: frozen, documented pydantic models; YAML loading; dotted-key overrides."""

from simulator.config.base import ConfigModel, apply_overrides, load_yaml, set_dotted

__all__ = ["ConfigModel", "apply_overrides", "load_yaml", "set_dotted"]
