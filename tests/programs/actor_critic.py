"""In the style of pytorch/examples reinforcement_learning/actor_critic.py: a shared layer with
an action head and a value head, SavedAction namedtuples, Categorical sampling, returns
normalised, the value loss F.smooth_l1_loss(value, torch.tensor([R])), both losses combined
with torch.stack(...).sum(), Adam. The same toy environment as reinforce.py."""
from collections import namedtuple

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim
from fusetorch.distributions import Categorical

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])
gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class ToyEnv:
    def reset(self, seed=None):
        self.state = np.random.default_rng(seed).uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.state, {}

    def step(self, action):
        self.state = self.state + (0.1 if action == 1 else -0.1) * np.array([1.0, 0.5, -0.3, 0.2])
        self.t += 1
        return self.state, 1.0, bool(np.abs(self.state).max() > 1.0), self.t >= 20, {}


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


def select_action(model, state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode(model, optimizer):
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def main():
    torch.manual_seed(543)
    model = Policy()
    optimizer = optim.Adam(model.parameters(), lr=3e-2)
    env = ToyEnv()
    for i_episode in range(3):
        state, _ = env.reset(seed=i_episode)
        for t in range(1, 10000):
            action = select_action(model, state)
            state, reward, done, truncated, _ = env.step(action)
            model.rewards.append(reward)
            if done or truncated:
                break
        loss = finish_episode(model, optimizer)
        print(i_episode, t, loss)
    return loss


if __name__ == "__main__":
    main()
