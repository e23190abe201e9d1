"""A case: the model (``model``), and its strict loading from YAML with every problem
located (``loading`` over ``yaml_source``, ``schema`` and ``checks``), and its writing as YAML
people review (``yaml_writer``)."""

__all__ = ["loading", "model", "schema", "steps", "yaml_source", "yaml_writer"]
