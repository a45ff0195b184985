"""Knowledge distillation (Hinton et al., 2015) as in PyTorch's knowledge-distillation
tutorial: a wider teacher CNN trained first, then put in `eval()` and run under
`torch.no_grad()`; a small student trained on `nn.KLDivLoss(reduction="batchmean")` between
its `log_softmax(logits / T)` and the teacher's `softmax(logits / T)`, times T**2, plus the
hard-label cross entropy; a second student matching the teacher's intermediate feature map
through a 1x1 `Conv2d` regressor with `MSELoss` (the tutorial's feature-map distillation),
its teacher features taken by a forward hook. Teacher, student and hinted student each have
their own Adam."""
import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.nn.functional as F

from tests.programs._state import dump_state, load_state

N_CLASSES = 4


def make_data(n, seed=0):
    """8x8 images of a bar (horizontal/vertical) or a blob (small/large) plus noise."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, N_CLASSES, n)
    images = 0.4 * rng.randn(n, 1, 8, 8)
    yy, xx = np.mgrid[0:8, 0:8]
    for i, c in enumerate(labels):
        r, col = rng.randint(2, 6, 2)
        if c == 0:
            images[i, 0, r, 1:7] += 1.5
        elif c == 1:
            images[i, 0, 1:7, col] += 1.5
        else:
            images[i, 0] += 1.5 * (((yy - r) ** 2 + (xx - col) ** 2) <= (1 if c == 2 else 4))
    return torch.tensor(images.astype(np.float32)), torch.tensor(labels)


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(width * 16, 32), nn.ReLU(), nn.Dropout(0.0),
                                        nn.Linear(32, N_CLASSES))

    def forward(self, x):
        return self.classifier(self.features(x))


class HintedStudent(Net):
    def __init__(self, width, teacher_width):
        super().__init__(width)
        self.regressor = nn.Conv2d(width, teacher_width, kernel_size=1)

    def forward(self, x):
        features = self.features(x)
        return self.classifier(features), self.regressor(features)


def run(steps=20, backend=None, init=None, seed=0, batch_size=32, T=2.0, soft_weight=0.25, compile_mode="step"):
    """Train the teacher for `steps` batches, then both students for `steps` batches;
    returns (losses, state): teacher losses, distillation losses, hint losses, then the
    three models' held-out accuracies. With `backend`, the students' training steps ("step")
    or the three models ("model") run under dynjit.compile."""
    torch.manual_seed(seed)
    x, y = make_data(512, seed)
    x_val, y_val = make_data(128, seed + 1)
    teacher, student, hinted = Net(16), Net(4), HintedStudent(4, 16)
    modules = {"teacher": teacher, "student": student, "hinted": hinted}
    load_state(torch, modules, init)
    compiled = {k: torch.compile(m, backend=backend) if backend and compile_mode == "model" else m
                for k, m in modules.items()}
    ce, kl, mse = nn.CrossEntropyLoss(), nn.KLDivLoss(reduction="batchmean"), nn.MSELoss()
    rng = np.random.RandomState(seed + 2)
    losses = []

    teacher_opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    teacher.train()
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        teacher_opt.zero_grad()
        loss = ce(compiled["teacher"](x[idx]), y[idx])
        loss.backward()
        teacher_opt.step()
        losses.append(loss.item())

    teacher_features = {}
    teacher.features.register_forward_hook(lambda module, inp, out: teacher_features.__setitem__("out", out))

    def distill_step(inputs, labels):
        with torch.no_grad():
            teacher_logits = compiled["teacher"](inputs)
        student_logits = compiled["student"](inputs)
        soft_targets = F.softmax(teacher_logits / T, dim=-1)
        soft_prob = F.log_softmax(student_logits / T, dim=-1)
        soft_loss = kl(soft_prob, soft_targets) * T ** 2
        loss = soft_weight * soft_loss + (1 - soft_weight) * ce(student_logits, labels)
        loss.backward()
        return loss

    def hint_step(inputs, labels):
        with torch.no_grad():
            compiled["teacher"](inputs)
        logits, regressed = compiled["hinted"](inputs)
        loss = 0.5 * mse(regressed, teacher_features["out"]) + ce(logits, labels)
        loss.backward()
        return loss

    if backend and compile_mode == "step":
        distill_step = torch.compile(distill_step, backend=backend)
        hint_step = torch.compile(hint_step, backend=backend)
    teacher.eval()
    student.train(), hinted.train()
    student_opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    hinted_opt = torch.optim.Adam(hinted.parameters(), lr=3e-3)
    hint_losses = []
    for _ in range(steps):
        idx = torch.tensor(rng.randint(0, len(x), batch_size))
        student_opt.zero_grad()
        losses.append(distill_step(x[idx], y[idx]).item())
        student_opt.step()
        hinted_opt.zero_grad()
        hint_losses.append(hint_step(x[idx], y[idx]).item())
        hinted_opt.step()
    losses += hint_losses
    student.eval(), hinted.eval()
    with torch.no_grad():
        for name in ("teacher", "student", "hinted"):
            out = compiled[name](x_val)
            logits = out[0] if isinstance(out, tuple) else out
            losses.append((logits.argmax(1) == y_val).float().mean().item())
    return losses, dump_state(modules)
