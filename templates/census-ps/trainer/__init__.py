"""Census income classifier trainer (ParameterServerStrategy)."""
