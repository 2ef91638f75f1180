"""Discovery of the package's public estimators and functions.

Public means: listed in the ``__all__`` of one of the field subpackages. A new method is
found here, and therefore by the estimator-check harness and the API reference, as soon
as its subpackage re-exports it.
"""

import importlib
import inspect

from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClusterMixin,
    RegressorMixin,
    TransformerMixin,
)

from sklearn_cispa import _FIELD_SUBPACKAGES as FIELD_SUBPACKAGES

_TYPE_MIXINS = {
    "classifier": ClassifierMixin,
    "regressor": RegressorMixin,
    "transformer": TransformerMixin,
    "cluster": ClusterMixin,
}


def _public_objects():
    seen = {}
    for sub in FIELD_SUBPACKAGES:
        module = importlib.import_module(f"sklearn_cispa.{sub}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            seen.setdefault(id(obj), (name, obj, sub))
    return list(seen.values())


def all_estimators(type_filter=None):
    """List the public scikit-learn estimators of sklearn-cispa.

    Parameters
    ----------
    type_filter : {"classifier", "regressor", "transformer", "cluster"} or list of \
            those, default=None
        Keep only estimators of these kinds; None keeps all.

    Returns
    -------
    estimators : list of (str, type)
        ``(name, class)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_cispa.utils import all_estimators
    >>> all(isinstance(name, str) for name, _ in all_estimators())
    True
    """
    if isinstance(type_filter, str):
        type_filter = [type_filter]
    if type_filter is not None:
        unknown = set(type_filter) - set(_TYPE_MIXINS)
        if unknown:
            raise ValueError(
                f"Unknown type_filter {sorted(unknown)}; use any of {sorted(_TYPE_MIXINS)}."
            )
    out = []
    for name, obj, _ in _public_objects():
        if not (inspect.isclass(obj) and issubclass(obj, BaseEstimator)):
            continue
        if not hasattr(obj, "fit"):  # parameter containers (the augmentations) are not estimators
            continue
        if inspect.isabstract(obj):
            continue
        if type_filter is not None and not any(
            issubclass(obj, _TYPE_MIXINS[t]) for t in type_filter
        ):
            continue
        out.append((name, obj))
    return sorted(out, key=lambda pair: pair[0])


def all_functions():
    """List the public functions of sklearn-cispa's field subpackages.

    Returns
    -------
    functions : list of (str, callable)
        ``(name, function)`` pairs sorted by name.

    Examples
    --------
    >>> from sklearn_cispa.utils import all_functions
    >>> all(callable(f) for _, f in all_functions())
    True
    """
    out = [(n, o) for n, o, _ in _public_objects() if inspect.isfunction(o)]
    return sorted(out, key=lambda pair: pair[0])


def public_objects_by_field():
    """Map each field subpackage to the sorted public names it exports.

    Used by the documentation build to write the API reference.

    Returns
    -------
    fields : dict of str to list of str

    Examples
    --------
    >>> from sklearn_cispa.utils.discovery import public_objects_by_field
    >>> "causal" in public_objects_by_field()
    True
    """
    fields = {}
    for sub in FIELD_SUBPACKAGES:
        module = importlib.import_module(f"sklearn_cispa.{sub}")
        names = []
        for name in getattr(module, "__all__", ()):
            home = getattr(getattr(module, name), "__module__", "") or ""
            # a re-export of another field's object (CharMLPLanguageModel in memorization)
            # is documented once, under the field that defines it
            other = home.split(".")[1] if home.startswith("sklearn_cispa.") else sub
            if other != sub and other in FIELD_SUBPACKAGES:
                continue
            names.append(name)
        fields[sub] = sorted(names)
    return fields
