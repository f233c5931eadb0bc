"""The job description: what a job is, as pure, validated data (no I/O, no platform calls).

- :mod:`.spec` — :class:`~.spec.JobSpec` and :func:`~.spec.build_spec`: the entry point, the roles, the settings.
- :mod:`.replicas` — a role's values: :class:`~.replicas.Pool`, :class:`~.replicas.Machine`, :class:`~.replicas.Accelerator`,
  :class:`~.replicas.Resources`, the scale tiers; :mod:`.checks` — names, labels, env, images, durations.
- :mod:`.resources` — a replica's neutral :class:`~.spec.Resources` in each platform's terms.
- :mod:`.machines`, :mod:`.catalog` — machine types, accelerators, legacy names, scale tiers.
- :mod:`.knobs` — every knob declared once (name, type, help, flag and config-file spellings).
- :mod:`.limits` — the bounds every count and input is checked against.
- :mod:`.restarts`, :mod:`.fallbacks`, :mod:`.requirements` — restart policies, machine
  fallback lists, a trainer's dependencies.
"""
