"""Configuration readers: documents from outside, read within bounds into the job description.

- :mod:`.files` — YAML/JSON files (``--config``, ``--hparams``, kubeconfig, ``config.yaml``) read bounded.
- :mod:`.document` — typed, key-checked access to one parsed document.
- :mod:`.job` — a job configuration file (either format below) as ``Job`` keywords.
- :mod:`.vertex`, :mod:`.legacy` — Vertex AI's ``CustomJobSpec`` and AI Platform's ``trainingInput``.
- :mod:`.pool_flags` — gcloud's ``--worker-pool-spec``; :mod:`.migrate` — a Kubeflow TFJob manifest.
"""
