"""Deep Q-learning (Mnih et al., 2015) in the style of PyTorch's DQN tutorial, on a small
grid world written here (no gym): a replay memory of `namedtuple` transitions in a
`collections.deque` sampled with `random.sample`, epsilon-greedy action selection with
`random.random()` and an exponentially decaying epsilon, the policy net's Q-values at the
taken actions by `gather`, the target net's `max(1).values` for non-final next states
(a boolean mask from `map(lambda s: s is not None, ...)` and `torch.cat` of the non-final
states), `SmoothL1Loss`, AdamW with `amsgrad=True`, in-place gradient value clipping
(`clip_grad_value_`), and the target network updated by a soft update through
`state_dict()` / `load_state_dict()` (every step) and a hard copy (every few episodes)."""
import math
import random
from collections import deque, namedtuple

import numpy as np

import dynjit as torch
import dynjit.nn as nn
import dynjit.optim as optim

from tests.programs._state import dump_state, load_state

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class GridWorld:
    """A 5x5 grid: start in a random cell, reach the goal (4, 4) for +1; each move costs
    0.05; walls at the edges; an episode ends at the goal or after 20 moves. The state is the
    position one-hot in rows and columns."""
    MOVES = [(-1, 0), (1, 0), (0, -1), (0, 1)]

    def __init__(self, rng):
        self.rng = rng

    def _state(self):
        s = np.zeros(10, np.float32)
        s[self.pos[0]], s[5 + self.pos[1]] = 1, 1
        return s

    def reset(self):
        self.pos = (self.rng.randint(0, 4), self.rng.randint(0, 4))
        self.t = 0
        return self._state()

    def step(self, action):
        dr, dc = self.MOVES[action]
        self.pos = (min(max(self.pos[0] + dr, 0), 4), min(max(self.pos[1] + dc, 0), 4))
        self.t += 1
        done = self.pos == (4, 4)
        reward = 1.0 if done else -0.05
        return self._state(), reward, done, self.t >= 20


class ReplayMemory:
    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations=10, n_actions=4):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, 32)
        self.layer2 = nn.Linear(32, 32)
        self.layer3 = nn.Linear(32, n_actions)

    def forward(self, x):
        x = torch.relu(self.layer1(x))
        x = torch.relu(self.layer2(x))
        return self.layer3(x)


def run(steps=20, backend=None, init=None, seed=0, batch_size=16, gamma=0.9, tau=0.05, compile_mode="step"):
    """Play `steps` episodes, optimizing after every move once the memory holds a batch;
    returns (losses, state): the mean loss per episode, then the episode returns. With
    `backend`, the optimization step ("step") or the two networks ("model") run under
    dynjit.compile."""
    torch.manual_seed(seed)
    random.seed(seed)
    env = GridWorld(np.random.RandomState(seed))
    policy_net, target_net = DQN(), DQN()
    load_state(torch, {"policy": policy_net}, init)
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = optim.AdamW(policy_net.parameters(), lr=3e-3, amsgrad=True)
    memory = ReplayMemory(500)
    criterion = nn.SmoothL1Loss()
    policy = torch.compile(policy_net, backend=backend) if backend and compile_mode == "model" else policy_net
    target = torch.compile(target_net, backend=backend) if backend and compile_mode == "model" else target_net
    eps_start, eps_end, eps_decay = 0.9, 0.05, 200
    steps_done = 0

    def select_action(state):
        nonlocal steps_done
        sample = random.random()
        eps_threshold = eps_end + (eps_start - eps_end) * math.exp(-1. * steps_done / eps_decay)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                return policy(state).max(1).indices.view(1, 1)
        return torch.tensor([[random.randrange(4)]], dtype=torch.long)

    def optimize_step(state_batch, action_batch, reward_batch, non_final_mask, non_final_next_states):
        state_action_values = policy(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(state_batch.size(0))
        with torch.no_grad():
            next_state_values[non_final_mask] = target(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * gamma) + reward_batch
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        return loss

    step_fn = torch.compile(optimize_step, backend=backend) if backend and compile_mode == "step" else optimize_step

    def optimize_model():
        transitions = memory.sample(batch_size)
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        loss = step_fn(torch.cat(batch.state), torch.cat(batch.action), torch.cat(batch.reward),
                       non_final_mask, non_final_next_states)
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        return loss.item()

    losses, returns = [], []
    for i_episode in range(steps):
        state = torch.tensor(env.reset()).unsqueeze(0)
        episode_losses, episode_return = [], 0.0
        while True:
            action = select_action(state)
            observation, reward, terminated, truncated = env.step(action.item())
            episode_return += reward
            next_state = None if terminated else torch.tensor(observation).unsqueeze(0)
            memory.push(state, action, next_state, torch.tensor([reward]))
            state = next_state
            if len(memory) >= batch_size:
                episode_losses.append(optimize_model())
            # soft update of the target network: theta' <- tau * theta + (1 - tau) * theta'
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * tau + target_net_state_dict[key] * (1 - tau)
            target_net.load_state_dict(target_net_state_dict)
            if terminated or truncated:
                break
        if i_episode % 5 == 4:
            target_net.load_state_dict(policy_net.state_dict())
        losses.append(float(np.mean(episode_losses)) if episode_losses else 0.0)
        returns.append(episode_return)
    return losses + returns, dump_state({"policy": policy_net, "target": target_net})
