"""model/task.py: N-digit addition written least significant digit first, the held-out split,
the answer as a person writes it."""
import torch
from hypothesis import given, settings, strategies as st

from kladder.model import task


def test_the_docstring_s_example_57_plus_8_at_three_digits():
    p = task.encode(torch.tensor([57]), torch.tensor([8]), 3)
    assert p.prompt.tolist() == [[7, 5, 0, task.PLUS, 8, 0, 0, task.EQUALS]]
    assert p.answer.tolist() == [[5, 6, 0, 0]]
    assert task.decode_answer(p.answer[0]) == "65"


def test_digits_lsb_first_pads_with_zeros():
    assert task.digits_lsb_first(torch.tensor([0, 120, 9]), 4).tolist() == [[0, 0, 0, 0], [0, 2, 1, 0], [9, 0, 0, 0]]


def test_the_carry_reaches_the_extra_answer_digit():
    p = task.encode(torch.tensor([999]), torch.tensor([1]), 3)
    assert p.answer.tolist() == [[0, 0, 0, 1]] and task.decode_answer(p.answer[0]) == "1000"


def test_decode_answer_zero_and_a_token_that_is_no_digit():
    assert task.decode_answer(torch.tensor([0, 0, 0])) == "0"
    assert task.decode_answer(torch.tensor([3, task.PLUS, 1])) == "1?3"


def test_held_out_is_the_hash_rule():
    a, b = torch.tensor([0, 1, 2]), torch.tensor([0, 16 - 7919 % 16, 1])
    assert task.held_out(a, b).tolist() == [True, True, False]


def test_sample_draws_only_its_split_is_seeded_and_within_n_digits():
    held = task.sample(50, 2, torch.Generator().manual_seed(0), "held_out")
    train = task.sample(50, 2, torch.Generator().manual_seed(0), "train")
    assert held.a.shape == (50,) and held.prompt.shape == (50, 6) and held.answer.shape == (50, 3)
    assert task.held_out(held.a, held.b).all() and not task.held_out(train.a, train.b).any()
    assert int(held.a.max()) < 100 and int(held.b.min()) >= 0
    again = task.sample(50, 2, torch.Generator().manual_seed(0), "held_out")
    assert torch.equal(held.prompt, again.prompt)


@settings(max_examples=50, deadline=None)
@given(a=st.integers(0, 99_999), b=st.integers(0, 99_999))
def test_the_answer_decodes_to_the_sum_and_the_prompt_to_its_operands(a, b):
    p = task.encode(torch.tensor([a]), torch.tensor([b]), 5)
    assert int(task.decode_answer(p.answer[0])) == a + b
    assert int(task.decode_answer(p.prompt[0, :5])) == a and int(task.decode_answer(p.prompt[0, 6:11])) == b
    assert p.prompt[0, 5] == task.PLUS and p.prompt[0, 11] == task.EQUALS
