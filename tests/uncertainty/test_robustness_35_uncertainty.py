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
