"""The job description: what a job is, as pure, validated data (no I/O, no platform calls).

- :mod:`.request` — the job as asked, typed: :class:`~.request.JobRequest` (what was given, before defaults; laid
  over a config file's by :meth:`~.request.JobRequest.over`), which makes the :class:`~.spec.JobSpec`; each knob's
  value lands in it where the knob declares (:func:`~.request.sort_keywords`).
- :mod:`.shape` — the roles as asked (:class:`~.shape.Shape` of :class:`~.shape.RoleRequest` s) and the pools they make.
- :mod:`.spec` — :class:`~.spec.JobSpec`: the checked job, the entry point, its pools, the settings.
- :mod:`.replicas` — a role's values: :class:`~.replicas.Pool`, :class:`~.replicas.Machine`, :class:`~.replicas.Accelerator`,
  :class:`~.replicas.Resources`, the scale tiers; :mod:`.checks` — names, labels, env, images, durations.
- :mod:`.resources` — a replica's neutral :class:`~.spec.Resources` in each platform's terms.
- :mod:`.machines`, :mod:`.catalog` — machine types, accelerators, legacy names, scale tiers.
- :mod:`.knobs` — every knob declared once (name, type, help, flag and config-file spellings).
- :mod:`.limits` — the bounds every count and input is checked against.
- :mod:`.restarts`, :mod:`.fallbacks`, :mod:`.requirements` — restart policies, machine
  fallback lists, a trainer's dependencies.
"""
