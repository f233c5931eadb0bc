"""Census income data: the UCI Adult columns, an offline generator, and tf.data input.

When no ``--train-files`` are given, :func:`ensure_generated_data` writes a small,
deterministic census-like CSV (same columns and vocabularies as UCI Adult, no header)
whose label really depends on the features, so the model has something to learn.
Real ``adult.data`` / ``adult.test`` files (local paths, globs or ``gs://`` URIs) are
read the same way: leading spaces, ``?`` for missing values, a trailing ``.`` on the
test labels and header or comment lines are all tolerated.
"""

from __future__ import annotations

import io
import math
import os
import random
from typing import Any, Sequence

#: Column names in file order (the UCI Adult schema).
CSV_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "gender",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income_bracket",
)
LABEL_COLUMN = "income_bracket"
POSITIVE_LABEL = ">50K"
NUMERIC_COLUMNS = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")

#: Vocabularies of the categorical columns (UCI Adult).
VOCABULARIES: dict[str, tuple[str, ...]] = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ),
    "education": (
        "Preschool",
        "1st-4th",
        "5th-6th",
        "7th-8th",
        "9th",
        "10th",
        "11th",
        "12th",
        "HS-grad",
        "Some-college",
        "Assoc-voc",
        "Assoc-acdm",
        "Bachelors",
        "Masters",
        "Prof-school",
        "Doctorate",
    ),
    "marital_status": (
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "gender": ("Female", "Male"),
    "native_country": (
        "United-States",
        "Mexico",
        "Philippines",
        "Germany",
        "Canada",
        "India",
        "England",
        "China",
        "Cuba",
        "Jamaica",
        "South",
        "Italy",
        "Puerto-Rico",
        "Vietnam",
        "Japan",
    ),
}
CATEGORICAL_COLUMNS = tuple(VOCABULARIES)

#: Defaults for tf.io.decode_csv: a float for numeric columns, a string otherwise.
_RECORD_DEFAULTS = [[0.0] if c in NUMERIC_COLUMNS else [""] for c in CSV_COLUMNS]

#: Rows of the generated files; small so that a first run takes seconds.
GENERATED_TRAIN_ROWS = 4000
GENERATED_EVAL_ROWS = 1000


def _weighted(rng: random.Random, values: Sequence[str], weights: Sequence[float]) -> str:
    return rng.choices(values, weights=weights, k=1)[0]


def generate_rows(n: int, seed: int) -> list[list[Any]]:
    """``n`` census-like rows (UCI Adult column order), the same for the same seed.

    Incomes depend on education, age, marriage, hours, capital gains and occupation
    through a logistic model with noise, so roughly a quarter of the rows are
    ``>50K`` and a good model reaches well above the majority-class accuracy.
    """
    rng = random.Random(seed)
    vocab = VOCABULARIES
    rows: list[list[Any]] = []
    for _ in range(n):
        age = int(min(90, max(17, rng.gauss(38.5, 13.5))))
        education = _weighted(rng, vocab["education"], (1, 2, 3, 6, 5, 9, 11, 4, 32, 22, 4, 3, 16, 5, 2, 1))
        education_num = vocab["education"].index(education) + 1
        gender = _weighted(rng, vocab["gender"], (33, 67))
        marital = _weighted(rng, vocab["marital_status"], (46, 14, 33, 3, 3, 1, 0.1) if age > 22 else (5, 1, 92, 1, 0.1, 1, 0.1))
        if marital.startswith("Married"):
            relationship = "Husband" if gender == "Male" else "Wife"
        else:
            relationship = _weighted(rng, ("Not-in-family", "Own-child", "Unmarried", "Other-relative"), (45, 30 if age < 30 else 8, 18, 5))
        occupation = rng.choice(vocab["occupation"][:-1]) if rng.random() < 0.97 else "?"
        workclass = _weighted(rng, vocab["workclass"], (70, 8, 3.5, 3, 6.5, 4, 0.1, 0.1))
        race = _weighted(rng, vocab["race"], (85, 3, 1, 1, 10))
        country = _weighted(rng, vocab["native_country"], (90, 2, 0.6, 0.4, 0.4, 0.3, 0.3, 0.3, 0.3, 0.2, 0.2, 0.2, 0.4, 0.2, 0.2))
        hours = int(min(99, max(1, rng.gauss(40.5, 12))))
        capital_gain = int(rng.lognormvariate(8.3, 1.0)) if rng.random() < 0.08 else 0
        capital_loss = int(rng.uniform(1400, 2500)) if rng.random() < 0.05 else 0
        fnlwgt = int(max(12285, rng.gauss(189778, 105550)))
        logit = (
            -5.4
            + 0.45 * (education_num - 9)
            + 0.055 * min(age, 55)
            + 2.1 * (marital in ("Married-civ-spouse", "Married-AF-spouse"))
            + 0.035 * (hours - 40)
            + 2.5 * (capital_gain > 5000)
            + 0.9 * (occupation in ("Exec-managerial", "Prof-specialty", "Tech-support"))
            + 0.3 * (gender == "Male")
            + rng.gauss(0.0, 0.6)
        )
        label = ">50K" if rng.random() < 1.0 / (1.0 + math.exp(-logit)) else "<=50K"
        rows.append(
            [
                age,
                workclass,
                fnlwgt,
                education,
                education_num,
                marital,
                occupation,
                relationship,
                race,
                gender,
                capital_gain,
                capital_loss,
                hours,
                country,
                label,
            ]
        )
    return rows


def render_csv(rows: Sequence[Sequence[Any]]) -> str:
    """CSV text in the UCI layout: no header, ``", "`` between fields."""
    out = io.StringIO()
    for row in rows:
        out.write(", ".join(str(v) for v in row) + "\n")
    return out.getvalue()


def ensure_generated_data(data_dir: str, seed: int = 42) -> tuple[str, str]:
    """Write the generated train and eval CSV files under ``data_dir`` unless present.

    Every task of a job may call this at once (they write identical bytes), so
    each file is written under a unique temporary name and renamed into place.

    Args:
        data_dir: a local directory or ``gs://`` prefix, usually ``JOB_DIR/data``.
        seed: the generator's seed; the eval file uses ``seed + 1``.

    Returns:
        The paths of the train and eval files.
    """
    import tensorflow as tf

    tf.io.gfile.makedirs(data_dir)
    paths = []
    for name, rows, row_seed in (
        ("adult.data.csv", GENERATED_TRAIN_ROWS, seed),
        ("adult.test.csv", GENERATED_EVAL_ROWS, seed + 1),
    ):
        path = os.path.join(data_dir, name)
        if not tf.io.gfile.exists(path):
            tmp = f"{path}.tmp-{os.getpid()}-{random.getrandbits(32):08x}"
            with tf.io.gfile.GFile(tmp, "w") as f:
                f.write(render_csv(generate_rows(rows, row_seed)))
            tf.io.gfile.rename(tmp, path, overwrite=True)
        paths.append(path)
    return paths[0], paths[1]


def parse_csv_batch(lines: Any) -> tuple[dict[str, Any], Any]:
    """Turn a batch of CSV lines into ``(features, label)`` tensors.

    Strings are stripped (UCI files put a space after each comma) and the label
    becomes 1.0 for ``>50K`` (also ``>50K.`` as in ``adult.test``), else 0.0.
    """
    import tensorflow as tf

    columns = tf.io.decode_csv(lines, record_defaults=_RECORD_DEFAULTS)
    features = {}
    for name, value in zip(CSV_COLUMNS, columns):
        features[name] = tf.strings.strip(value) if value.dtype == tf.string else value
    label = features.pop(LABEL_COLUMN)
    label = tf.strings.regex_replace(label, r"\.$", "")
    return features, tf.cast(tf.equal(label, POSITIVE_LABEL), tf.float32)


def make_dataset(
    file_patterns: Sequence[str],
    batch_size: int,
    *,
    shuffle: bool,
    repeat: bool,
    num_shards: int = 1,
    shard_index: int = 0,
    seed: int = 0,
) -> Any:
    """A ``tf.data.Dataset`` of ``(features, label)`` batches read from CSV files.

    Lines that do not start with a digit (headers, blank lines, the ``|1x3 Cross
    validator`` line of ``adult.test``) are skipped.

    Args:
        file_patterns: files or globs, local or ``gs://``.
        batch_size: rows per batch (per worker).
        shuffle: shuffle rows (training).
        repeat: repeat forever (training; the step count ends an epoch).
        num_shards: how many input pipelines share the data (one per worker).
        shard_index: which of them this one is.
        seed: shuffle seed, so that runs are repeatable.
    """
    import tensorflow as tf

    files = tf.data.Dataset.from_tensor_slices(list(expand_files(file_patterns)))
    ds = files.interleave(tf.data.TextLineDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.filter(lambda line: tf.strings.regex_full_match(line, r"\s*[0-9].*"))
    if num_shards > 1:
        ds = ds.shard(num_shards, shard_index)
    if shuffle:
        ds = ds.shuffle(10 * batch_size, seed=seed)
    if repeat:
        ds = ds.repeat()
    return ds.batch(batch_size).map(parse_csv_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def expand_files(file_patterns: Sequence[str]) -> list[str]:
    """The sorted files matching ``file_patterns`` (local or ``gs://``).

    Raises:
        FileNotFoundError: a pattern matches nothing; the message names it.
    """
    import tensorflow as tf

    files: list[str] = []
    for pattern in file_patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"no file matches {pattern!r}: give existing CSV files or leave the option out to generate data")
        files.extend(matched)
    return files
