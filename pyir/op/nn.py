"""Neural-network operators (``pyir.op.nn.*``)."""
