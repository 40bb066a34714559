"""In the style of pytorch/examples reinforcement_learning/reinforce.py: a policy network with
Dropout and softmax, actions drawn from distributions.Categorical and their log_prob kept,
discounted returns normalised with mean/std (eps from numpy's finfo), the policy loss
torch.cat(...).sum(), Adam. A tiny deterministic stand-in for CartPole: the state drifts and
the episode ends when it leaves [-1, 1] or after 20 steps."""
from itertools import count

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim
from fusetorch.distributions import Categorical

gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class ToyEnv:
    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.state, {}

    def step(self, action):
        self.state = self.state + (0.1 if action == 1 else -0.1) * np.array([1.0, 0.5, -0.3, 0.2])
        self.t += 1
        done = bool(np.abs(self.state).max() > 1.0)
        return self.state, 1.0, done, self.t >= 20, {}


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = None
optimizer = None


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


def main():
    global policy, optimizer
    torch.manual_seed(543)
    policy = Policy()
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    env = ToyEnv()
    running_reward = 10
    for i_episode in range(3):
        state, _ = env.reset(seed=i_episode)
        ep_reward = 0
        for t in range(1, 10000):
            action = select_action(state)
            state, reward, done, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        loss = finish_episode()
        print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(i_episode, ep_reward, running_reward))
    return loss


if __name__ == "__main__":
    main()
