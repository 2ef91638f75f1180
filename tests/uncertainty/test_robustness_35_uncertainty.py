"""Issue 35: right or refused on every input (uncertainty field)."""

import numpy as np
import pytest

from sklearn_cispa.uncertainty import maximum_mean_imprecision


@pytest.mark.parametrize("as_list", [False, True])
@pytest.mark.parametrize("method", ["exact", "linear", "bruteforce"])
def test_mmi_refuses_complex_input(as_list, method):
    probas = np.array([[0.7 + 0.5j, 0.3], [0.5, 0.5]])
    with pytest.raises(TypeError, match="real numbers.*complex"):
        maximum_mean_imprecision(probas.tolist() if as_list else probas, method=method)
    # a complex array with zero imaginary part is refused too: the dtype is the error
    with pytest.raises(TypeError, match="complex"):
        maximum_mean_imprecision(probas.real.astype(complex), method=method)
    assert maximum_mean_imprecision(probas.real, method=method)[0] == pytest.approx(0.2)


@pytest.mark.parametrize("which", ["y_true", "y_pred"])
def test_accuracy_rejection_curve_refuses_missing_labels(which):
    # was: NaN != NaN, so a missing label counted silently as a wrong prediction
    from sklearn_cispa.uncertainty import accuracy_rejection_curve

    args = dict(y_true=np.array([0.0, 1.0, 1.0, 0.0]), y_pred=np.array([0.0, 1.0, 0.0, 1.0]),
                uncertainty=[0.1, 0.2, 0.9, 0.8])
    args[which] = args[which].copy()
    args[which][0] = np.nan
    with pytest.raises(ValueError, match=f"{which} contains NaN"):
        accuracy_rejection_curve(**args, rejection_rates=[0.0, 0.5])
    # float labels without NaN keep working
    args[which][0] = 0.0
    _, acc, _ = accuracy_rejection_curve(**args, rejection_rates=[0.0, 0.5])
    np.testing.assert_allclose(acc, [0.5, 1.0])
