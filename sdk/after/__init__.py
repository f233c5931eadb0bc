"""What a job left, read back and shown: its outputs, its metric curves and the report page.

- :mod:`.outputs` — the files under the job dir, sorted into kinds, downloaded on request.
- :mod:`.metrics` — the scalars it logged for TensorBoard, drawn as curves.
- :mod:`.report` — ``tfjob report``: one self-contained HTML page about a job.

Above the backends (outputs on Cloud Storage use Vertex AI's credentials); the typed values
these return and the diagnosis of a failure are :mod:`tfjob.results`, below the backends.
"""
