"""The carrier kinds resources/arms.yaml's `carry` names, one module each, registered once
(registry.py) behind one interface (base.py)."""
