"""Fixtures shared by the llvm backend's tests."""
import pytest

from backends.llvm import lowering

# nll_loss(log_softmax(x)) has two lowerings, chosen by size (lowering.NLL_ROW_FORM_MIN_ELEMENTS):
# the row log-sum-exp form (no (N, C) log_softmax written) and, for small inputs, the
# log_softmax kernel followed by one nll_loss. Tests of the pattern run both at any size.
NLL_FORMS = {"row_form": 1, "log_softmax_kept": 1 << 62}


@pytest.fixture(params=sorted(NLL_FORMS))
def nll_form(request, monkeypatch):
    monkeypatch.setattr(lowering, "NLL_ROW_FORM_MIN_ELEMENTS", NLL_FORMS[request.param])
    return request.param


@pytest.fixture
def nll_row_form(monkeypatch):
    """The row log-sum-exp form at every size."""
    monkeypatch.setattr(lowering, "NLL_ROW_FORM_MIN_ELEMENTS", 1)
