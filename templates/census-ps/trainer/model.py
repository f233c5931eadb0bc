"""The census income classifier and its serving signatures.

Preprocessing lives inside the Keras model (lookup, discretization, normalization
with fixed statistics), so the exported SavedModel takes raw census values and no
``adapt()`` pass over the data is needed: that keeps the model identical under
every distribution strategy and on every task.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import data

#: Numeric features normalised with fixed statistics of the census population.
NORMALIZED = {"age": (38.6, 13.6), "education_num": (10.1, 2.6), "hours_per_week": (40.4, 12.3)}
#: Numeric features that matter through thresholds rather than linearly.
BUCKETED = {"capital_gain": (1.0, 3000.0, 5000.0, 10000.0, 20000.0), "capital_loss": (1.0, 1500.0, 2000.0, 2500.0)}
#: The inputs of the model, in CSV order (``fnlwgt`` is a sampling weight, not a feature).
FEATURES = tuple(c for c in data.CSV_COLUMNS if c in NORMALIZED or c in BUCKETED or c in data.VOCABULARIES)


def build_model(learning_rate: float = 0.01, hidden_units: Sequence[int] = (64, 32)) -> Any:
    """A compiled Keras model from raw census features to P(income > 50K).

    Create it inside ``strategy.scope()`` so that its variables are distributed.

    Args:
        learning_rate: Adam's learning rate.
        hidden_units: sizes of the hidden ReLU layers.
    """
    import tensorflow as tf

    inputs = {
        name: tf.keras.Input(shape=(1,), name=name, dtype=tf.string if name in data.VOCABULARIES else tf.float32) for name in FEATURES
    }
    numeric = tf.keras.layers.Concatenate(name="numeric")([inputs[n] for n in NORMALIZED])
    mean, std = zip(*NORMALIZED.values())
    encoded = [tf.keras.layers.Normalization(mean=list(mean), variance=[s * s for s in std], name="normalize")(numeric)]
    for name, boundaries in BUCKETED.items():
        buckets = tf.keras.layers.Discretization(bin_boundaries=list(boundaries), name=f"{name}_bucket")(inputs[name])
        encoded.append(
            tf.keras.layers.CategoryEncoding(num_tokens=len(boundaries) + 1, output_mode="one_hot", name=f"{name}_onehot")(buckets)
        )
    for name, vocabulary in data.VOCABULARIES.items():
        # One out-of-vocabulary slot takes "?" (missing) and values unseen in the vocabulary.
        encoded.append(
            tf.keras.layers.StringLookup(vocabulary=list(vocabulary), output_mode="one_hot", name=f"{name}_lookup")(inputs[name])
        )
    x = tf.keras.layers.Concatenate(name="features")(encoded)
    for i, units in enumerate(hidden_units):
        x = tf.keras.layers.Dense(units, activation="relu", name=f"hidden_{i}")(x)
    output = tf.keras.layers.Dense(1, activation="sigmoid", name="probability")(x)
    model = tf.keras.Model(inputs=inputs, outputs=output, name="census")
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate),
        loss=tf.keras.losses.BinaryCrossentropy(),
        metrics=[tf.keras.metrics.BinaryAccuracy(name="accuracy"), tf.keras.metrics.AUC(name="auc")],
    )
    return model


def to_model_inputs(features: dict[str, Any]) -> dict[str, Any]:
    """Keep the model's features and give each the ``(batch, 1)`` shape its input expects."""
    import tensorflow as tf

    return {name: tf.expand_dims(features[name], -1) for name in FEATURES}


def _predictions(model: Any, features: dict[str, Any]) -> dict[str, Any]:
    import tensorflow as tf

    probability = tf.reshape(model(to_model_inputs(features), training=False), [-1])
    classes = tf.where(probability > 0.5, data.POSITIVE_LABEL, "<=50K")
    return {"probabilities": probability, "classes": classes}


def serving_signatures(model: Any) -> dict[str, Any]:
    """The SavedModel signatures of ``model``.

    ``serving_default`` takes one tensor per raw feature (``age=[39.0]``,
    ``workclass=[b"State-gov"]``, …), as Vertex AI prediction sends JSON instances;
    ``predict_csv`` takes whole CSV rows without the label (``csv_row=[b"39, State-gov, …"]``).
    Both return ``probabilities`` (of ``>50K``) and ``classes``.
    """
    import tensorflow as tf

    specs = {name: tf.TensorSpec([None], tf.string if name in data.VOCABULARIES else tf.float32, name=name) for name in FEATURES}

    @tf.function(input_signature=[specs])
    def serve_features(features: dict[str, Any]) -> dict[str, Any]:
        return _predictions(model, features)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="csv_row")])
    def serve_csv(csv_row: Any) -> dict[str, Any]:
        # Append an empty label so the row parses exactly like the training files.
        features, _ = data.parse_csv_batch(tf.strings.join([csv_row, ","]))
        return _predictions(model, features)

    return {"serving_default": serve_features, "predict_csv": serve_csv}
