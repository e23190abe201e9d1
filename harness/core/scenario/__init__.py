"""A case: the model (``model``), and its strict loading from YAML with every problem
located (``loading`` over ``yaml_source``, ``schema`` and ``checks``)."""

__all__ = ["loading", "model", "schema", "steps"]
