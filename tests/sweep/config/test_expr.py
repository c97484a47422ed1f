import numpy as np
import pytest

from sweep.config.expr import ExprError, evaluate, parse


def test_vectorised_constraints():
    env = {"J": np.array([8, 40, 64, 48]), "K": np.array([8, 16, 34, 32])}
    t = parse("min(J, K) >= 0.5 * max(J, K) and J * K <= 2106", set(env))
    assert evaluate(t, env).tolist() == [True, False, False, True]
    assert evaluate(parse("8 <= J < 48", set(env)), env).tolist() == [True, True, False, False]
    assert evaluate(parse("not J == 8", set(env)), env).tolist() == [False, True, True, True]


@pytest.mark.parametrize("text, match", [
    ("J +", "not a valid expression"),
    ("Z > 3", "unknown name 'Z'"),
    ("__import__('os')", "only the functions"),
    ("J.real > 1", "Attribute is not allowed"),
    ("J > 'a'", "only numbers"),
    ("[J][0] > 1", "not allowed"),
])
def test_refused(text, match):
    with pytest.raises(ExprError, match=match):
        parse(text, {"J", "K"})
