"""Playground 1 (unipo_build.site.playgrounds.objective_1d): closed forms, gradients, optimisers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from unipo_build.site.playgrounds import objective_1d as o1
from unipo_build.site.playgrounds.rng import Mulberry32, Stream, uniform_block

GRID = np.linspace(-25.0, 25.0, 200_001)
DX = GRID[1] - GRID[0]
POINTS = [(-1.0, 0.5), (0.0, 1.5), (1.7, 0.6), (2.5, 2.2), (-3.0, 0.3)]


def quad(values) -> float:
    return float(np.sum(values) * DX)


# ---------------------------------------------------------------------------- rng


def test_mulberry32_matches_reference_values():
    # printed by the reference JavaScript implementation (node) for seed 12345
    r = Mulberry32(12345)
    got = [r.uniform() for _ in range(3)]
    assert got == [0.9797282677609473, 0.3067522644996643, 0.484205421525985]


def test_vectorised_stream_equals_the_scalar_generator():
    for seed in (0, 1, 12345, 2**32 - 1):
        scalar = Mulberry32(seed)
        assert np.array_equal(uniform_block(seed, 0, 40), [scalar.uniform() for _ in range(40)])
    stream, scalar = Stream(99), Mulberry32(99)
    normals = np.concatenate([stream.normals(3), stream.normals(4)])
    assert np.array_equal(normals, [scalar.normal() for _ in range(7)])


def test_normals_have_unit_variance():
    z = Stream(7).normals(200_000)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01


# ---------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("preset", sorted(o1.PRESETS))
@pytest.mark.parametrize("mu, sigma", POINTS)
def test_expected_reward_closed_form_matches_quadrature(preset, mu, sigma):
    bumps = o1.PRESETS[preset].bumps
    density = np.exp(o1.log_normal_pdf(GRID, mu, sigma))
    assert o1.expected_reward(mu, sigma, bumps) == pytest.approx(quad(density * o1.reward(GRID, bumps)), abs=1e-9)


@pytest.mark.parametrize("mu, sigma", POINTS)
def test_kl_closed_form_matches_quadrature(mu, sigma):
    logp = o1.log_normal_pdf(GRID, mu, sigma)
    logq = o1.log_normal_pdf(GRID, 0.0, o1.REF_SIGMA)
    assert o1.kl_to_ref(mu, sigma) == pytest.approx(quad(np.exp(logp) * (logp - logq)), abs=1e-9)
    assert o1.kl_to_ref(0.0, o1.REF_SIGMA) == 0.0


@pytest.mark.parametrize("preset", sorted(o1.PRESETS))
@pytest.mark.parametrize("beta", [0.1, 0.3, 1.0])
@pytest.mark.parametrize("mu, sigma", POINTS)
def test_analytic_gradient_matches_finite_differences(preset, beta, mu, sigma):
    bumps = o1.PRESETS[preset].bumps
    s = math.log(sigma)
    h = 1e-6

    def j(m, log_s):
        return o1.objective(m, math.exp(log_s), bumps, beta)

    fd_mu = (j(mu + h, s) - j(mu - h, s)) / (2 * h)
    fd_s = (j(mu, s + h) - j(mu, s - h)) / (2 * h)
    g_mu, g_s = o1.objective_grad(mu, s, bumps, beta)
    assert g_mu == pytest.approx(fd_mu, rel=1e-6, abs=1e-8)
    assert g_s == pytest.approx(fd_s, rel=1e-6, abs=1e-8)


def test_score_is_the_gradient_of_the_log_density():
    a = np.array([-2.0, 0.3, 1.9])
    mu, s, h = 0.4, math.log(0.8), 1e-6
    sc_mu, sc_s = o1.score(a, mu, s)
    fd_mu = (o1.log_normal_pdf(a, mu + h, math.exp(s)) - o1.log_normal_pdf(a, mu - h, math.exp(s))) / (2 * h)
    fd_s = (o1.log_normal_pdf(a, mu, math.exp(s + h)) - o1.log_normal_pdf(a, mu, math.exp(s - h))) / (2 * h)
    assert np.allclose(sc_mu, fd_mu, rtol=1e-6) and np.allclose(sc_s, fd_s, rtol=1e-6)


# ---------------------------------------------------------------------------- pi*


def pi_star_series(bump: o1.Bump, beta: float, terms: int = 400) -> tuple[float, float, float]:
    """pi*'s mean, std and log Z for a single bump, in closed form term by term.

    exp(x g(a)) = sum_n x^n g(a)^n / n! with x = h / beta and g a Gaussian bump, and
    pi_ref(a) g(a)^n is an unnormalised Gaussian in a, so every term integrates exactly:
    precision p_n = 1/s_ref^2 + n/w^2, mean m_n = (n c / w^2) / p_n,
    weight C_n = exp(p_n m_n^2 / 2 - n c^2 / (2 w^2)) / sqrt(p_n s_ref^2).
    """
    x = bump.height / beta
    z = m1 = m2 = 0.0
    for n in range(terms):
        p = 1.0 / o1.REF_SIGMA**2 + n / bump.width**2
        m = (n * bump.center / bump.width**2) / p
        log_c = p * m * m / 2.0 - n * bump.center**2 / (2.0 * bump.width**2) - 0.5 * math.log(p * o1.REF_SIGMA**2)
        sign = -1.0 if (x < 0 and n % 2) else 1.0
        term = sign * math.exp(n * math.log(abs(x)) - math.lgamma(n + 1) + log_c) if n else math.exp(log_c)
        z += term
        m1 += term * m
        m2 += term * (m * m + 1.0 / p)
    mean = m1 / z
    return mean, math.sqrt(m2 / z - mean * mean), math.log(z)


@pytest.mark.parametrize("preset", ["single", "negative"])
@pytest.mark.parametrize("beta", [0.3, 0.5, 1.0, 2.0])
def test_pi_star_moments_match_the_series_closed_form(preset, beta):
    (bump,) = o1.PRESETS[preset].bumps
    mean, std, log_z = pi_star_series(bump, beta)
    star = o1.pi_star((bump,), beta)
    assert star.mean == pytest.approx(mean, abs=1e-8)
    assert star.std == pytest.approx(std, abs=1e-8)
    assert star.log_z == pytest.approx(log_z, abs=1e-8)


@pytest.mark.parametrize("preset", sorted(o1.PRESETS))
def test_pi_star_quadrature_is_converged(preset):
    bumps = o1.PRESETS[preset].bumps
    coarse = o1.pi_star(bumps, 0.15)
    fine = o1.pi_star(bumps, 0.15, grid=np.linspace(-15.0, 15.0, 60_001))
    assert coarse.mean == pytest.approx(fine.mean, abs=1e-7)
    assert coarse.std == pytest.approx(fine.std, abs=1e-7)


@pytest.mark.parametrize("mu, sigma", POINTS)
def test_objective_is_beta_log_z_minus_reverse_kl_to_pi_star(mu, sigma):
    """J(theta) = beta log Z - beta KL(pi_theta || pi*), the identity the page uses."""
    bumps, beta = o1.PRESETS["two"].bumps, 0.4
    star = o1.pi_star(bumps, beta)
    logp = o1.log_normal_pdf(GRID, mu, sigma)
    log_star = o1.log_normal_pdf(GRID, 0.0, o1.REF_SIGMA) + o1.reward(GRID, bumps) / beta - star.log_z
    kl = quad(np.exp(logp) * (logp - log_star))
    assert o1.objective(mu, sigma, bumps, beta) == pytest.approx(beta * star.log_z - beta * kl, abs=1e-7)


# ---------------------------------------------------------------------------- optimisers


@pytest.mark.parametrize("preset", sorted(o1.PRESETS))
@pytest.mark.parametrize("beta", [0.1, 0.3, 1.0, 2.0])
def test_exact_ascent_increases_j_at_every_small_step(preset, beta):
    for start in ((0.0, o1.REF_SIGMA), (-2.5, 0.4), (3.0, 2.5)):
        settings = o1.Settings(preset=preset, beta=beta, steps=300, lr_scale=0.05,
                               start_mu=start[0], start_sigma=start[1])
        j = np.array(o1.run_exact(settings).objective)
        assert np.all(np.diff(j) >= -1e-12), (start, np.min(np.diff(j)))
        assert j[-1] > j[0]


def test_dpo_and_dro_end_near_pi_star_moments():
    """Where pi* is nearly Gaussian (single bump, beta = 1) both land on its moments."""
    settings = o1.Settings(preset="single", beta=1.0, steps=400, n_samples=64)
    star = o1.pi_star(settings.bumps, settings.beta)
    for method in ("dpo", "dro"):
        for seed in (1, 2, 3):
            traj = o1.run_method(method, settings, seed=seed)
            # average the last 50 steps: the end point of a noisy run
            mu = float(np.mean(traj.mu[-50:]))
            sigma = float(np.mean(traj.sigma[-50:]))
            assert mu == pytest.approx(star.mean, abs=0.1), (method, seed)
            assert sigma == pytest.approx(star.std, abs=0.1), (method, seed)
    dro = o1.run_method("dro", settings)
    assert np.mean(dro.value[-50:]) == pytest.approx(settings.beta * star.log_z, abs=0.05)


def test_one_epoch_never_clips_and_more_epochs_do():
    one = o1.Settings(epochs=1)
    assert not any(o1.run_method("ppo", one).clip_fraction)
    assert not any(o1.run_method("grpo", one).clip_fraction)
    assert np.mean(o1.run_method("grpo", o1.Settings()).clip_fraction) > 0


def test_runs_are_reproducible_and_depend_on_the_seed():
    settings = o1.Settings(steps=30)
    for method in o1.METHODS:
        a = o1.run_method(method, settings)
        b = o1.run_method(method, settings)
        assert a.mu == b.mu and a.log_sigma == b.log_sigma
        if method != "exact":
            assert a.mu != o1.run_method(method, settings, seed=2).mu


def test_group_size_only_changes_grpo():
    base = o1.Settings(steps=40)
    other = replace(base, group_size=32)
    for method in o1.METHODS:
        same = o1.run_method(method, base).mu == o1.run_method(method, other).mu
        assert same == (method != "grpo"), method


def test_band_brackets_the_median():
    band = o1.objective_band("pg", o1.Settings(steps=30), n_seeds=5)
    assert np.all(band.low <= band.median) and np.all(band.median <= band.high)
    exact = o1.objective_band("exact", o1.Settings(steps=30), n_seeds=3)
    assert np.array_equal(exact.low, exact.high)


def test_log_sigma_stays_in_its_box():
    for method in o1.METHODS:
        traj = o1.run_method(method, o1.Settings(preset="trap", beta=0.1, steps=200))
        assert min(traj.log_sigma) >= o1.LOG_SIGMA_MIN - 1e-12
        assert max(traj.log_sigma) <= o1.LOG_SIGMA_MAX + 1e-12
        assert np.all(np.isfinite(traj.objective))


# ---------------------------------------------------------------------------- what the page says


def test_the_pages_claims_hold_for_the_defaults():
    d = o1.Settings()
    runs = o1.run_all(d)
    star = o1.pi_star(d.bumps, d.beta)
    sigma = {m: t.sigma[-1] for m, t in runs.items()}
    # GRPO ends the narrowest; the exact gradient narrower than pi* (reverse KL is mode-seeking)
    assert sigma["grpo"] == min(sigma.values())
    assert sigma["exact"] < star.std
    # DPO and DRO end wider than the exact gradient
    assert sigma["dpo"] > sigma["exact"] and sigma["dro"] > sigma["exact"]
    # policy gradient follows the exact gradient
    assert abs(runs["pg"].mu[-1] - runs["exact"].mu[-1]) < 0.15
    # J(pi*) bounds every Gaussian
    assert max(max(t.objective) for t in runs.values()) <= d.beta * star.log_z + 1e-9


def test_the_trap_traps_the_exact_gradient():
    trap = o1.Settings(preset="trap")
    exact = o1.run_method("exact", trap)
    hill, peak = trap.bumps[0].center, trap.bumps[1].center
    best_mu, _, best_j = o1.best_gaussian(trap.bumps, trap.beta)
    assert exact.mu[-1] < 0 and abs(exact.mu[-1] - hill) < abs(exact.mu[-1] - peak)
    assert best_mu == pytest.approx(peak, abs=0.1)
    assert best_j > exact.objective[-1] + 0.1
    for method in ("dpo", "dro"):
        assert o1.run_method(method, trap).mu[-1] > exact.mu[-1] + 0.3
