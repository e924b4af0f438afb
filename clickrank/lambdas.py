r"""Lambda gradients and Newton weights of LambdaRank / LambdaMART (the hot loop).

Pure functions that compute, for all queries at once, the *forces*
:math:`\lambda_i` (minus the gradient of the pairwise loss with respect to the
score of document ``i``) and the *Newton weights* :math:`w_i` (its second
derivative) that LightGBM's tree learner turns into leaf values.

Conventions (Burges (2010), §4 and §7; Wu et al. (2010); LightGBM's
``rank_objective.hpp``):

* For a pair with gain :math:`g_i > g_j` the RankNet cost is
  :math:`C_{ij} = \log(1 + e^{-\sigma (s_i - s_j)})`; its misorder
  probability is :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})`.
* The pair force is :math:`\lambda_{ij} = \sigma\, \rho_{ij}\, |\Delta Z_{ij}|`
  and the pair Newton weight :math:`\sigma^2 \rho_{ij} (1 - \rho_{ij})
  |\Delta Z_{ij}|`, i.e. exactly :math:`-\partial C / \partial s_i` and
  :math:`\partial^2 C / \partial s_i^2` with the cost scaled by
  :math:`|\Delta Z_{ij}|` (the forces *include* :math:`\sigma`, as LightGBM's).
* :math:`|\Delta Z_{ij}|` is 1 in RankNet mode, and in LambdaRank mode
  :math:`|\Delta \mathrm{NDCG}_{ij}| = |g_i - g_j|\,|D(p_i) - D(p_j)| /
  \mathrm{IDCG}` with :math:`D(p) = 1/\log_2(1 + p)`, the ranks :math:`p`
  from the current scores (descending, ties by row order) and IDCG the ideal
  DCG of the query's gains (at the truncation level when one is set).
* The force of a document is :math:`\lambda_i = \sum_{j: g_i > g_j}
  \lambda_{ij} - \sum_{j: g_j > g_i} \lambda_{ji}` (positive = push up);
  the forces of a query sum to zero. LightGBM takes ``grad = -lambda`` and
  ``hess = w``; its Newton leaf value :math:`\sum \lambda / (\sum w + \lambda_{L2})`
  then moves documents with positive force up.

With ``sigma = 1`` these reproduce the worked examples of DESIGN §4: for
labels (0, 3, 1, 0, 2, 0) at scores (2.5, ..., 0) the RankNet forces are
(-2.234, 1.571, 0.182, -1.269, 2.429, -0.679) and the LambdaRank forces
(-0.383, 0.286, -0.005, -0.052, 0.184, -0.031).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from ._core._segments import ranks as _ranks
from ._core._segments import segment_ids
from ._core._threads import numba_threads
from ._core._validation import InputError, check_positive, check_qptr

__all__ = [
    "Lambdas",
    "lambdas",
    "lambda_objective",
    "pair_lambdas",
    "SessionLambdas",
    "session_lambdas",
    "SessionStep",
    "position_bias_update",
    "ranknet_loss",
    "pair_loss",
    "delta_ndcg",
    "idcg",
]

_NO_TRUNCATION = np.iinfo(np.int64).max


class Lambdas(NamedTuple):
    r"""Forces and Newton weights, float64 ``[n_docs]`` each.

    ``forces`` is :math:`\lambda` (= minus the gradient); ``weights`` is the
    Newton weight :math:`w` (the hessian). Unpacks as ``forces, weights``.
    """

    forces: np.ndarray
    weights: np.ndarray

    def lightgbm(self) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess) = (-forces, weights)``, what a LightGBM objective returns."""
        return -self.forces, self.weights


class SessionLambdas(NamedTuple):
    """Forces and Newton weights per data row, and the bias accumulators of Unbiased LambdaMART.

    ``forces``, ``weights``: float64 ``[n_rows]``; ``li``, ``lj``: float64
    ``[K]``, the per-position sums :math:`l^+_k`, :math:`l^-_k` of
    :func:`session_lambdas` (Hu et al. (2019), Eq. 30-31).
    """

    forces: np.ndarray
    weights: np.ndarray
    li: np.ndarray
    lj: np.ndarray

    def lightgbm(self) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess) = (-forces, weights)``, what a LightGBM objective returns."""
        return -self.forces, self.weights


# -- numba kernels -----------------------------------------------------------


@njit(cache=True)
def _idcg_one(g: np.ndarray, k: int) -> float:
    srt = np.sort(g)[::-1]
    out = 0.0
    m = min(k, srt.shape[0])
    for r in range(m):
        out += srt[r] / np.log2(2.0 + r)
    return out


@njit(cache=True)
def _idcg_small(g, cnt, k, buf):  # pragma: no cover
    """:func:`_idcg_one` of ``g[:cnt]`` with an insertion sort into ``buf`` (no allocation)."""
    for i in range(cnt):  # descending, as np.sort(g)[::-1]
        v = g[i]
        m = i
        while m > 0 and buf[m - 1] < v:
            buf[m] = buf[m - 1]
            m -= 1
        buf[m] = v
    out = 0.0
    for r in range(min(k, cnt)):
        out += buf[r] / np.log2(2.0 + r)
    return out


@njit(cache=True)
def _idcg_kernel(gains, qptr, k):
    nq = qptr.shape[0] - 1
    out = np.zeros(nq)
    buf = np.empty(64)
    for q in range(nq):
        g = gains[qptr[q] : qptr[q + 1]]
        cnt = g.shape[0]
        out[q] = _idcg_small(g, cnt, k, buf) if cnt <= 64 else _idcg_one(g, k)
    return out


@njit(cache=True)
def _stable_order_desc(s, cnt, order):  # pragma: no cover
    """``order[:cnt]`` = indices of ``s[:cnt]`` by descending value, ties in index order."""
    if cnt > 64:
        order[:cnt] = np.argsort(-s[:cnt], kind="mergesort")
        return
    for k in range(cnt):
        v = s[k]
        m = k
        while m > 0 and s[order[m - 1]] < v:
            order[m] = order[m - 1]
            m -= 1
        order[m] = k


@njit(cache=True)
def _warm_order_desc(s, cnt, order):  # pragma: no cover
    """``order[:cnt]``, a permutation of ``0..cnt-1`` (the last round's order), sorted in
    place by descending ``s``, ties in index order: :func:`_stable_order_desc`'s permutation
    (a stable sort's is unique), by insertion from an order one tree away from sorted, so
    in time about linear in the list instead of quadratic from the row order."""
    for k in range(1, cnt):
        x = order[k]
        v = s[x]
        m = k
        while m > 0:
            y = order[m - 1]
            w = s[y]
            if w > v or (w == v and y < x):
                break
            order[m] = y
            m -= 1
        order[m] = x


_RUN = 8  # the runs that the merge sort sorts by insertion


@njit(cache=True)
def _merge_order_desc(s, cnt, order, tmp, key, key_tmp):  # pragma: no cover
    """:func:`_stable_order_desc` without allocation, for long lists: a bottom-up merge sort.

    Runs of ``_RUN`` are sorted by insertion, then merged in rounds between
    ``order``/``key`` and ``tmp``/``key_tmp`` (all at least ``cnt`` long); the
    keys ride along with the indices, so comparisons read contiguous memory.
    Two runs of one length are merged from both ends at once without branches
    (two independent chains instead of a mispredicted branch per element).
    A stable sort's permutation is unique, so this is ``argsort(-s, kind="mergesort")``.
    """
    for b in range(0, cnt, _RUN):
        e = min(b + _RUN, cnt)
        for k in range(b, e):
            v = s[k]
            m = k
            while m > b and key[m - 1] < v:
                key[m] = key[m - 1]
                order[m] = order[m - 1]
                m -= 1
            key[m] = v
            order[m] = k
    src_o, src_k, dst_o, dst_k = order, key, tmp, key_tmp
    width = _RUN
    swapped = False
    while width < cnt:
        for lo in range(0, cnt, 2 * width):
            mid = min(lo + width, cnt)
            hi = min(lo + 2 * width, cnt)
            if hi - mid == mid - lo:
                i, j, i_end, j_end = lo, mid, mid - 1, hi - 1
                for k in range(mid - lo):
                    # the head: the right run's goes first only if strictly larger (stability)
                    right = src_k[j] > src_k[i]
                    dst_k[lo + k] = src_k[j] if right else src_k[i]
                    dst_o[lo + k] = src_o[j] if right else src_o[i]
                    j += right
                    i += 1 - right
                    # the tail: the left run's goes last only if strictly smaller
                    left = src_k[i_end] < src_k[j_end]
                    dst_k[hi - 1 - k] = src_k[i_end] if left else src_k[j_end]
                    dst_o[hi - 1 - k] = src_o[i_end] if left else src_o[j_end]
                    i_end -= left
                    j_end -= 1 - left
                continue
            i = lo
            j = mid
            for out in range(lo, hi):
                if j < hi and (i >= mid or src_k[j] > src_k[i]):
                    dst_k[out] = src_k[j]
                    dst_o[out] = src_o[j]
                    j += 1
                else:
                    dst_k[out] = src_k[i]
                    dst_o[out] = src_o[i]
                    i += 1
        src_o, src_k, dst_o, dst_k = dst_o, dst_k, src_o, src_k
        swapped = not swapped
        width *= 2
    if swapped:  # the last round merged into tmp
        order[:cnt] = tmp[:cnt]


@njit(cache=True, error_model="numpy", inline="always")
def _gather_ranked(
    a, cnt, s, order, gains, doc_w, use_w, sigma, best, s_r, g_r, e_r, w_r, lam_r, hes_r, nz
):  # pragma: no cover
    """One query's terms copied in rank order, zeroed sums: a step of :func:`_lambda_queries`."""
    n_nz = 0
    for k in range(cnt):
        r = order[k]
        s_r[k] = s[r]
        g_r[k] = gains[a + r]
        if g_r[k] != 0.0:
            nz[n_nz] = k
            n_nz += 1
        e_r[k] = np.exp(sigma * (s[r] - best))
        w_r[k] = doc_w[a + r] if use_w else 1.0
        lam_r[k] = 0.0
        hes_r[k] = 0.0
    return n_nz


@njit(cache=True, error_model="numpy", inline="always")
def _rank_pairs(
    cnt, top, n_nz, nz, g_r, s_r, e_r, w_r, lam_r, hes_r, disc, sigma, ndcg, inv_idcg, use_w,
    damp,
):  # fmt: skip  # pragma: no cover
    """The pair loop of :func:`_lambda_queries` for one query in rank order; returns sum 2f."""
    total = 0.0
    # where most gains are 0 (clicks), a 0 at rank i pairs only with the non-zero gains
    # below it: the pairs of two 0s add nothing, so the same additions in the same order
    sparse = 2 * n_nz < cnt
    c0 = 0  # the first entry of nz below rank i
    for i in range(top):
        while c0 < n_nz and nz[c0] <= i:
            c0 += 1
        gi = g_r[i]
        si = s_r[i]
        ei = e_r[i]
        wi = w_r[i]
        di = disc[i]
        lam_i = lam_r[i]  # in registers over the j loop (no other pair touches them)
        hes_i = hes_r[i]
        skip = sparse and gi == 0.0
        for x in range(n_nz - c0 if skip else cnt - i - 1):
            j = nz[c0 + x] if skip else i + 1 + x  # the ranks below i, ascending
            gj = g_r[j]
            if gi == gj:
                continue
            up = gi > gj  # i is the higher-gain document of the pair
            if ndcg:
                dz = ((gi - gj) if up else (gj - gi)) * (di - disc[j]) * inv_idcg
            else:
                dz = 1.0
            if use_w:
                dz *= wi * w_r[j]
            ds = (si - s_r[j]) if up else (s_r[j] - si)  # s_hi - s_lo
            if damp:
                dz /= 0.01 + abs(ds)
            e_lo = e_r[j] if up else ei
            den = ei + e_r[j]
            if den > 1e-280:
                rho = e_lo / den
            else:
                rho = 1.0 / (1.0 + np.exp(sigma * ds))
            f = sigma * rho * dz
            h = sigma * f * (1.0 - rho)
            sf = f if up else -f  # the force on i; -sf on the other
            lam_i += sf
            lam_r[j] -= sf
            hes_i += h
            hes_r[j] += h
            total += 2.0 * f
        lam_r[i] = lam_i
        hes_r[i] = hes_i
    return total


@njit(cache=True, error_model="numpy")
def _lambda_queries(
    q0, q1, scores, gains, qptr, sigma, trunc, normalize, ndcg, max_dcg, disc, doc_w, use_w,
    forces, weights, last,
):  # fmt: skip
    """LambdaRank / RankNet forces for queries ``q0..q1-1`` (LightGBM's loop, exact sigmoid).

    ``max_dcg`` holds every query's IDCG (used when ``ndcg``). With ``use_w``
    each pair's weight is multiplied by ``doc_w[i] * doc_w[j]``.

    The misorder probability is computed as ``e_lo / (e_lo + e_hi)`` with
    ``e = exp(sigma (s - max s))`` (one ``exp`` per document instead of per
    pair); when both terms underflow it falls back to the direct formula.

    The pair loop runs on copies of the query's scores, gains, ``e`` and
    weights in ranked order, and sums the forces and weights by rank (copied
    back to the rows at the end): contiguous reads instead of a gather through
    the order per pair. Every document receives the same additions in the same
    order as in a loop over rows, so the result is the same, bit for bit.

    ``last`` holds each query's order of the previous call (its rows' offsets in the
    query, ``0..n-1`` before the first): lists of up to 64 documents are sorted from
    it (:func:`_warm_order_desc`; one boosting round moves few documents) and it is
    updated; the order, and so the result, does not depend on it.
    """
    longest = 1
    for q in range(q0, q1):
        longest = max(longest, qptr[q + 1] - qptr[q])
    # buffers reused by every query of the block
    order = np.empty(longest, np.int64)
    order_tmp = np.empty(longest, np.int64)
    key_tmp = np.empty(longest)
    s_r = np.empty(longest)  # by rank: scores (also the merge sort's keys), gains, e, weights
    g_r = np.empty(longest)
    e_r = np.empty(longest)
    w_r = np.empty(longest)
    lam_r = np.empty(longest)  # by rank: the sums of forces and Newton weights
    hes_r = np.empty(longest)
    nz = np.empty(longest, np.int64)  # the ranks with a non-zero gain, ascending
    for q in range(q0, q1):
        a = qptr[q]
        cnt = qptr[q + 1] - a
        for r in range(a, a + cnt):
            forces[r] = 0.0
            weights[r] = 0.0
        if cnt < 2:
            continue
        s = scores[a : a + cnt]
        inv_idcg = 1.0
        if ndcg:
            if max_dcg[q] <= 0.0:
                continue
            inv_idcg = 1.0 / max_dcg[q]
        if cnt <= 64:  # stable: ties keep row order; from the last call's order
            warm = last[a : a + cnt]
            _warm_order_desc(s, cnt, warm)
            for k in range(cnt):
                order[k] = warm[k]
        else:
            _merge_order_desc(s, cnt, order, order_tmp, s_r, key_tmp)
        best = s[order[0]]
        damp = normalize and best != s[order[cnt - 1]]  # LightGBM: not when all scores tie
        n_nz = _gather_ranked(a, cnt, s, order, gains, doc_w, use_w, sigma, best, s_r, g_r, e_r,
                              w_r, lam_r, hes_r, nz)  # fmt: skip
        total = _rank_pairs(cnt, min(cnt - 1, trunc), n_nz, nz, g_r, s_r, e_r, w_r, lam_r, hes_r,
                            disc, sigma, ndcg, inv_idcg, use_w, damp)  # fmt: skip
        scale = normalize and total > 0.0
        factor = np.log2(1.0 + total) / total if scale else 1.0
        for k in range(cnt):
            r = a + order[k]
            forces[r] = lam_r[k] * factor if scale else lam_r[k]
            weights[r] = hes_r[k] * factor if scale else hes_r[k]


@njit(cache=True)
def _session_kinds(rows, sptr, pos, clicks):  # pragma: no cover
    """Per session: its clicks, and 1 if it starts a list, 0 if it continues one, -1 if no pair.

    A *list* is a run of consecutive sessions with pairs that show the same rows
    at the same positions (they differ only in their clicks).
    """
    n_s = sptr.shape[0] - 1
    kind = np.empty(n_s, np.int8)
    n_clicks = np.empty(n_s, np.int64)
    prev_a = -1
    prev_cnt = -1
    for u in range(n_s):
        a = sptr[u]
        cnt = sptr[u + 1] - a
        n_click = 0
        for r in range(a, a + cnt):
            n_click += clicks[r]
        n_clicks[u] = n_click
        if n_click == 0 or n_click == cnt:
            kind[u] = -1
            continue
        same = cnt == prev_cnt
        if same:
            for r in range(cnt):
                if rows[a + r] != rows[prev_a + r] or pos[a + r] != pos[prev_a + r]:
                    same = False
                    break
        kind[u] = 0 if same else 1
        prev_a = a
        prev_cnt = cnt
    return kind, n_clicks


@njit(cache=True)
def _plan_sizes(sptr, kind, n_clicks):  # pragma: no cover
    """Lists, session pairs, ordered entry pairs, longest session: :func:`_session_plan`'s sizes."""
    n_s = sptr.shape[0] - 1
    n_lists = 0
    n_pairs = 0  # the session pairs
    n_ordered = 0  # the ordered pairs of entries of the lists
    longest = 1
    for u in range(n_s):
        cnt = sptr[u + 1] - sptr[u]
        longest = max(longest, cnt)
        if kind[u] == 1:
            n_lists += 1
            n_ordered += cnt * (cnt - 1)
        if kind[u] >= 0:
            n_pairs += n_clicks[u] * (cnt - n_clicks[u])
    return n_lists, n_pairs, n_ordered, longest


@njit(cache=True, inline="always")
def _split_clicks(clicks, a0, cnt, up, dn):  # pragma: no cover
    """A session's clicked and unclicked entries into ``up`` and ``dn``: a step of the plan."""
    n_up = 0
    n_dn = 0
    for r in range(cnt):
        if clicks[a0 + r]:
            up[n_up] = r
            n_up += 1
        else:
            dn[n_dn] = r
            n_dn += 1
    return n_up, n_dn


@njit(cache=True)
def _session_plan(
    rows, sptr, clicks, counts, kind, n_clicks, inv_idcg_tab, n_rows
):  # pragma: no cover
    r"""The static structure of the sessions, found once per fit (it does not depend on scores).

    A *list* is a run of sessions (:func:`_session_kinds`) that show the same
    rows at the same positions. Its *list pairs* are the distinct (clicked
    entry, unclicked entry) pairs of its sessions, by entry index in the logged
    order, so a session's pairs are fixed whatever the scores; each list pair
    also has the id of its unordered pair of rows (the transcendental terms
    depend only on the two scores) and ``tw``, the summed
    :math:`\mathrm{count}/\mathrm{IDCG}` of the sessions that have it (the
    weight of its cost in the bias sums).

    Returns ``(lists, lp_a, lp_b, lp_key, tw, s_ptr, s_idx)``: ``lists`` int64
    ``[n_lists, 5]`` = (first entry, length, first list pair, first session,
    end session); ``lp_a``, ``lp_b`` the entries (0-based in the list) and
    ``lp_key`` = ``lo * n_rows + hi`` of the rows of every list pair; every
    session's list pairs ``s_idx[s_ptr[u]:s_ptr[u + 1]]``.
    """
    n_s = sptr.shape[0] - 1
    n_lists, n_pairs, n_ordered, longest = _plan_sizes(sptr, kind, n_clicks)
    n_bound = min(n_pairs, n_ordered)  # of the list pairs
    lists = np.zeros((n_lists, 5), np.int64)
    lp_a = np.empty(n_bound, np.int32)
    lp_b = np.empty(n_bound, np.int32)
    lp_key = np.empty(n_bound, np.int64)
    tw = np.zeros(n_bound)
    s_ptr = np.zeros(n_s + 1, np.int64)
    s_idx = np.empty(n_pairs, np.int32)
    slot = np.full(longest * longest, -1, np.int64)  # (a, b) -> list pair of the current list
    used = np.empty(longest * longest, np.int64)
    n_used = 0
    l = -1
    n_lp = 0
    n_sp = 0
    up = np.empty(longest, np.int64)
    dn = np.empty(longest, np.int64)
    for u in range(n_s):
        s_ptr[u] = n_sp
        if kind[u] < 0:
            continue
        a0 = sptr[u]
        cnt = sptr[u + 1] - a0
        if kind[u] == 1:  # a new list
            for e in range(n_used):
                slot[used[e]] = -1
            n_used = 0
            if l >= 0:
                lists[l, 4] = u
            l += 1
            lists[l, 0] = a0
            lists[l, 1] = cnt
            lists[l, 2] = n_lp
            lists[l, 3] = u
        n_up, n_dn = _split_clicks(clicks, a0, cnt, up, dn)
        wc = counts[u] * inv_idcg_tab[n_clicks[u]]
        for x in range(n_up):
            a = up[x]
            for y in range(n_dn):
                b = dn[y]
                t = a * cnt + b
                if slot[t] < 0:
                    slot[t] = n_lp
                    used[n_used] = t
                    n_used += 1
                    lp_a[n_lp] = a
                    lp_b[n_lp] = b
                    ra = rows[a0 + a]
                    rb = rows[a0 + b]
                    lp_key[n_lp] = min(ra, rb) * n_rows + max(ra, rb)
                    n_lp += 1
                p = slot[t]
                tw[p] += wc
                s_idx[n_sp] = p
                n_sp += 1
    s_ptr[n_s] = n_sp
    if l >= 0:
        lists[l, 4] = n_s
    return lists, lp_a[:n_lp], lp_b[:n_lp], lp_key[:n_lp], tw[:n_lp], s_ptr, s_idx[:n_sp]


@njit(cache=True)
def _session_sets_static(rows, lists, lp_a, lp_b, lp_q, set_of, set_rows, set_ptr,
                         set_shared):  # fmt: skip  # pragma: no cover
    """The plan's row sets (:meth:`SessionStep.__init__`): every list pair's slot among its
    set's ordered pairs of rows (``cp``; -1 in a set not ``set_shared``, which has none),
    the pair of rows of every slot (``sp_q``, -1 if no list pair has it) and each set's
    first slot (``set_pair_ptr``)."""
    n_sets = set_ptr.shape[0] - 1
    set_pair_ptr = np.zeros(n_sets + 1, np.int64)
    for g in range(n_sets):
        m = set_ptr[g + 1] - set_ptr[g]
        set_pair_ptr[g + 1] = set_pair_ptr[g] + (m * m if set_shared[g] else 0)
    sp_q = np.full(set_pair_ptr[n_sets], -1, np.int64)
    n_lp = lp_a.shape[0]
    cp = np.full(n_lp, -1, np.int64)
    n_l = lists.shape[0]
    for l in range(n_l):
        a0, cnt, p0 = lists[l, 0], lists[l, 1], lists[l, 2]
        p1 = lists[l + 1, 2] if l + 1 < n_l else n_lp
        g = set_of[l]
        if not set_shared[g]:
            continue
        s0 = set_ptr[g]
        for p in range(p0, p1):
            ra = rows[a0 + lp_a[p]]
            rb = rows[a0 + lp_b[p]]
            x = np.searchsorted(set_rows[s0 : s0 + cnt], ra)
            y = np.searchsorted(set_rows[s0 : s0 + cnt], rb)
            slot = set_pair_ptr[g] + x * cnt + y
            cp[p] = slot
            sp_q[slot] = lp_q[p]
    return cp, sp_q, set_pair_ptr


@njit(cache=True)
def _session_cells(pos, lists, lp_a, lp_b, n_k):  # pragma: no cover
    """Every list pair's (clicked, unclicked) position cell of the ``n_k x n_k`` tracked ones
    (-1 when a position is not tracked)."""
    n_lp = lp_a.shape[0]
    cell = np.empty(n_lp, np.int64)
    n_l = lists.shape[0]
    for l in range(n_l):
        a0, p0 = lists[l, 0], lists[l, 2]
        p1 = lists[l + 1, 2] if l + 1 < n_l else n_lp
        for p in range(p0, p1):
            k = pos[a0 + lp_a[p]] - 1
            m = pos[a0 + lp_b[p]] - 1
            cell[p] = k * n_k + m if k < n_k and m < n_k else -1
    return cell


@njit(cache=True)
def _order_of(scores, rows, a0, cnt, s, order, rank):  # pragma: no cover
    """``s[:cnt]`` = the scores of ``rows[a0:a0 + cnt]``, ``order`` their stable descending
    order and ``rank`` each one's place in it; returns whether they are not all equal."""
    best = -np.inf
    worst = np.inf
    for r in range(cnt):
        s[r] = scores[rows[a0 + r]]
        best = max(best, s[r])
        worst = min(worst, s[r])
    _stable_order_desc(s, cnt, order)
    for i in range(cnt):
        rank[order[i]] = i
    return best != worst


@njit(cache=True, error_model="numpy")
def _session_set_terms(
    g0, g1, scores, set_rows, set_ptr, set_pair_ptr, set_shared, sp_q, pair_terms, sigma,
    trunc, normalize, xgb_cost, disc, set_terms, set_state,
):  # fmt: skip  # pragma: no cover
    r"""Of each shared row set ``g0..g1-1`` whose rows' scores are all distinct: the
    terms of each of its ordered pairs of rows (clicked row first) that do not depend on the
    positions, ``set_terms`` = (:math:`\sigma \rho |\Delta Z|`, :math:`1 - \rho`, the
    cost), as :func:`_session_round` would find them in every list of the set.

    ``set_state[g]``: 1 the terms are set, 0 compute per list (not shared, or tied scores:
    the stable order of tied rows is the list's own). A slot beyond the truncation on both
    sides has a cost of -1."""
    longest = 1
    for g in range(g0, g1):
        longest = max(longest, set_ptr[g + 1] - set_ptr[g])
    s = np.empty(longest)
    order = np.empty(longest, np.int64)
    rank = np.empty(longest, np.int64)
    for g in range(g0, g1):
        set_state[g] = 0
        if not set_shared[g]:
            continue
        a0 = set_ptr[g]
        cnt = set_ptr[g + 1] - a0
        spread = _order_of(scores, set_rows, a0, cnt, s, order, rank)
        tied = False
        for i in range(1, cnt):
            if s[order[i]] == s[order[i - 1]]:
                tied = True
                break
        if tied:
            continue
        set_state[g] = 1
        damp = normalize and spread
        base = set_pair_ptr[g]
        for x in range(cnt):
            for y in range(cnt):
                slot = base + x * cnt + y
                q = sp_q[slot]
                if q < 0:
                    continue
                i = rank[x]
                j = rank[y]
                if i >= trunc and j >= trunc:
                    set_terms[slot, 2] = -1.0
                    continue
                dz = abs(disc[i] - disc[j])
                if damp:
                    dz *= pair_terms[q, 4]
                up = s[x] > s[y]
                rho = pair_terms[q, 3 - up]
                set_terms[slot, 0] = sigma * rho * dz
                set_terms[slot, 1] = 1.0 - rho
                set_terms[slot, 2] = dz * (pair_terms[q, 1] + pair_terms[q, 0] * (up == xgb_cost))


@njit(cache=True, error_model="numpy", inline="always")
def _session_factors(
    u0, u1, kind, s_ptr, s_idx, lp_terms, inv_idcg_tab, n_clicks, counts, normalize
):  # pragma: no cover
    """Sessions' normalisation factors onto their list pairs: a step of :func:`_session_lists`."""
    for u in range(u0, u1):  # the sessions: their normalisation, onto their pairs
        if kind[u] < 0:
            continue
        total = 0.0
        for x in range(s_ptr[u], s_ptr[u + 1]):
            total += lp_terms[s_idx[x], 0]
        inv_idcg = inv_idcg_tab[n_clicks[u]]
        factor = counts[u] * inv_idcg
        total *= 2.0 * inv_idcg
        if normalize and total > 0.0:
            factor *= np.log2(1.0 + total) / total
        for x in range(s_ptr[u], s_ptr[u + 1]):
            lp_terms[s_idx[x], 2] += factor


@njit(cache=True, error_model="numpy")
def _session_lists(
    l0, l1, scores, rows, counts, kind, n_clicks, lists, lp_a, lp_b, lp_q, tw, s_ptr, s_idx,
    inv_idcg_tab, sigma, trunc, normalize, xgb_cost, disc, pair_terms, lp_terms, forces,
    weights, set_of, set_state, set_terms, cp, cell, scale_tab, cost_sum, lp_cost, inline,
):  # fmt: skip  # pragma: no cover
    """Lists ``l0..l1-1`` of :func:`_session_round`: their pairs' terms (from their row
    set's when it has them), their sessions' normalisation, their forces onto their rows.
    ``inline``: each pair's cost goes straight into ``cost_sum``; else into ``lp_cost``, for
    a serial sum in the same order (the one-block bits on any number of blocks)."""
    n_lp = lp_a.shape[0]
    longest = 1
    for l in range(l0, l1):
        longest = max(longest, lists[l, 1])
    s = np.empty(longest)
    order = np.empty(longest, np.int64)
    rank = np.empty(longest, np.int64)
    for l in range(l0, l1):
        a0, cnt, p0, u0, u1 = lists[l, 0], lists[l, 1], lists[l, 2], lists[l, 3], lists[l, 4]
        p1 = lists[l + 1, 2] if l + 1 < lists.shape[0] else n_lp
        shared = set_state[set_of[l]] == 1
        damp = False
        if not shared:  # the list's own order (ties in its order)
            spread = _order_of(scores, rows, a0, cnt, s, order, rank)
            damp = normalize and spread
        for p in range(p0, p1):  # the list pairs' force and Newton weight, their cost
            lp_terms[p, 2] = 0.0
            if not inline:
                lp_cost[p] = 0.0
            if shared:
                slot = cp[p]
                c = set_terms[slot, 2]
                if c < 0.0:  # beyond the truncation
                    lp_terms[p, 0] = 0.0
                    lp_terms[p, 1] = 0.0
                    continue
                f0 = set_terms[slot, 0]
                one_minus_rho = set_terms[slot, 1]
            else:
                a = lp_a[p]
                b = lp_b[p]
                i = rank[a]
                j = rank[b]
                if i >= trunc and j >= trunc:
                    lp_terms[p, 0] = 0.0
                    lp_terms[p, 1] = 0.0
                    continue
                q = lp_q[p]
                dz = abs(disc[i] - disc[j])
                if damp:
                    dz *= pair_terms[q, 4]
                up = s[a] > s[b]
                rho = pair_terms[q, 3 - up]  # indexed, not branched: up is a coin flip
                f0 = sigma * rho * dz
                one_minus_rho = 1.0 - rho
                c = dz * (pair_terms[q, 1] + pair_terms[q, 0] * (up == xgb_cost))
            scale = 1.0
            k = cell[p]
            if k >= 0:
                scale = scale_tab[k]
                if inline:
                    cost_sum[k] += tw[p] * c
                else:
                    lp_cost[p] = tw[p] * c
            f = f0 * scale
            lp_terms[p, 0] = f
            lp_terms[p, 1] = sigma * f * one_minus_rho
        _session_factors(u0, u1, kind, s_ptr, s_idx, lp_terms, inv_idcg_tab, n_clicks, counts,
                         normalize)  # fmt: skip
        for p in range(p0, p1):  # the list's forces onto its rows
            w = lp_terms[p, 2]
            f = lp_terms[p, 0] * w
            h = lp_terms[p, 1] * w
            ra = rows[a0 + lp_a[p]]
            rb = rows[a0 + lp_b[p]]
            forces[ra] += f
            forces[rb] -= f
            weights[ra] += h
            weights[rb] += h


@njit(cache=True)
def _session_prologue(scores, rp_lo, rp_hi, t_plus, t_minus, sigma, pair_terms, forces,
                      weights, li, lj):  # fmt: skip  # pragma: no cover
    """A round's start: outputs zeroed, every pair of rows' terms, every position cell's bias
    scale; returns ``(scale_tab, cost_sum)``."""
    n_k = t_plus.shape[0]
    eps = 2.220446049250313e-16
    for r in range(forces.shape[0]):
        forces[r] = 0.0
        weights[r] = 0.0
    for k in range(n_k):
        li[k] = 0.0
        lj[k] = 0.0
    # bias scale of a (clicked, unclicked) position cell; a bias below eps turns it off
    scale_tab = np.ones(n_k * n_k)
    for k in range(n_k):
        for m in range(n_k):
            if t_plus[k] >= eps and t_minus[m] >= eps:
                scale_tab[k * n_k + m] = 1.0 / (t_plus[k] * t_minus[m])
    # per pair of rows: sigma |s_a - s_b|, log1p(exp(-that)), misorder probabilities when
    # the clicked row scores higher (column 2) / not higher (3), 1 / (0.01 + |s_a - s_b|)
    for q in range(rp_lo.shape[0]):
        d = abs(scores[rp_lo[q]] - scores[rp_hi[q]])
        v_x = sigma * d
        e = np.exp(-v_x)
        pair_terms[q, 0] = v_x
        pair_terms[q, 1] = np.log1p(e)
        pair_terms[q, 2] = e / (1.0 + e)
        pair_terms[q, 3] = 1.0 / (1.0 + e)
        pair_terms[q, 4] = 1.0 / (0.01 + d)
    return scale_tab, np.zeros(n_k * n_k)


@njit(cache=True)
def _session_bias_sums(cost_sum, t_plus, t_minus, li, lj):  # pragma: no cover
    """The t+/t- sums (Eq. 30-31) from the cost sums per (clicked, unclicked) cell."""
    n_k = t_plus.shape[0]
    eps = 2.220446049250313e-16
    for k in range(n_k):
        for m in range(n_k):
            c = cost_sum[k * n_k + m]
            if t_minus[m] >= eps:
                li[k] += c / t_minus[m]
            if t_plus[k] >= eps:
                lj[m] += c / t_plus[k]


@njit(cache=True, error_model="numpy")
def _session_round(
    scores, rows, counts, kind, n_clicks, lists, lp_a, lp_b, lp_q, tw, s_ptr, s_idx, rp_lo,
    rp_hi, inv_idcg_tab, set_of, set_rows, set_ptr, set_pair_ptr, set_shared, sp_q, cp, cell,
    t_plus, t_minus, sigma, trunc, normalize, xgb_cost, disc, pair_terms, lp_terms, set_terms,
    set_state, forces, weights, li, lj,
):  # fmt: skip  # pragma: no cover
    r"""Unbiased LambdaMART over distinct sessions (XGBoost's ``lambdarank_unbiased`` loop).

    Pairs (clicked, unclicked) of a session with a document in the current top
    ``trunc``; the pair's force and weight are divided by
    ``t_plus[p_clicked] * t_minus[p_unclicked]`` (0-based positions < K), its
    cost feeds ``li``/``lj``; everything is multiplied by the session's count.

    On the plan of :func:`_session_plan`: the transcendental terms once per
    pair of rows; the terms of a pair of rows that depend on the ranks (its
    :math:`|\Delta Z|`, force, Newton weight and cost before the bias scale) once per *row
    set* (lists that show the same rows in other orders, as swap and FairPairs
    interventions make; when the set's scores are all distinct, so that its order is the
    same in every one of its lists), else per list from its own order; then every list
    pair's force and weight times its cell's scale; a session sums the forces of its pairs
    (for the :math:`\log_2(1 + S)/S` normalisation) and adds its count / IDCG times that
    factor to its pairs' weights; the list's pairs then add their weighted forces to their
    two rows. The costs, weighted by the static ``tw``, are summed per (clicked,
    unclicked) position cell, and ``li``/``lj`` are the ``K x K`` cell sums divided by the
    other side's bias (Eq. 30-31 as one pass over the cells).
    """
    scale_tab, cost_sum = _session_prologue(scores, rp_lo, rp_hi, t_plus, t_minus, sigma,
                                            pair_terms, forces, weights, li, lj)  # fmt: skip
    _session_set_terms(0, set_ptr.shape[0] - 1, scores, set_rows, set_ptr, set_pair_ptr,
                       set_shared, sp_q, pair_terms, sigma, trunc, normalize, xgb_cost, disc,
                       set_terms, set_state)  # fmt: skip
    _session_lists(0, lists.shape[0], scores, rows, counts, kind, n_clicks, lists, lp_a, lp_b,
                   lp_q, tw, s_ptr, s_idx, inv_idcg_tab, sigma, trunc, normalize, xgb_cost,
                   disc, pair_terms, lp_terms, forces, weights, set_of, set_state, set_terms,
                   cp, cell, scale_tab, cost_sum, np.empty(0), True)  # fmt: skip
    _session_bias_sums(cost_sum, t_plus, t_minus, li, lj)


@njit(cache=True, parallel=True, error_model="numpy")
def _session_round_blocks(
    set_bounds, list_bounds, lp_cost, scores, rows, counts, kind, n_clicks, lists, lp_a, lp_b,
    lp_q, tw, s_ptr, s_idx, rp_lo, rp_hi, inv_idcg_tab, set_of, set_rows, set_ptr,
    set_pair_ptr, set_shared, sp_q, cp, cell, t_plus, t_minus, sigma, trunc, normalize,
    xgb_cost, disc, pair_terms, lp_terms, set_terms, set_state, forces, weights, li, lj,
):  # fmt: skip  # pragma: no cover
    """:func:`_session_round` on numba's threads: the row sets in blocks, then the lists in
    blocks that share no row (so each row's sums keep their order), each pair's cost kept
    and summed afterwards in the one-block order: the bits of one thread."""
    scale_tab, cost_sum = _session_prologue(scores, rp_lo, rp_hi, t_plus, t_minus, sigma,
                                            pair_terms, forces, weights, li, lj)  # fmt: skip
    for b in prange(set_bounds.shape[0] - 1):
        _session_set_terms(set_bounds[b], set_bounds[b + 1], scores, set_rows, set_ptr,
                           set_pair_ptr, set_shared, sp_q, pair_terms, sigma, trunc, normalize,
                           xgb_cost, disc, set_terms, set_state)  # fmt: skip
    for b in prange(list_bounds.shape[0] - 1):
        _session_lists(list_bounds[b], list_bounds[b + 1], scores, rows, counts, kind,
                       n_clicks, lists, lp_a, lp_b, lp_q, tw, s_ptr, s_idx, inv_idcg_tab,
                       sigma, trunc, normalize, xgb_cost, disc, pair_terms, lp_terms, forces,
                       weights, set_of, set_state, set_terms, cp, cell, scale_tab, cost_sum,
                       lp_cost, False)  # fmt: skip
    for p in range(lp_cost.shape[0]):
        k = cell[p]
        if k >= 0:
            cost_sum[k] += lp_cost[p]
    _session_bias_sums(cost_sum, t_plus, t_minus, li, lj)


@njit(cache=True)
def _ranknet_loss_kernel(scores, gains, qptr, sigma, out):
    nq = qptr.shape[0] - 1
    for q in range(nq):
        a = qptr[q]
        b = qptr[q + 1]
        acc = 0.0
        for i in range(a, b):
            for j in range(a, b):
                if gains[i] > gains[j]:
                    x = -sigma * (scores[i] - scores[j])
                    acc += max(x, 0.0) + np.log1p(np.exp(-abs(x)))
        out[q] = acc


# -- input checks ------------------------------------------------------------


def _vec(values, n: int | None, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-d, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InputError(f"{name} has {arr.shape[0]} entries, expected {n}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} must be finite (found NaN or inf)")
    return np.ascontiguousarray(arr)


def truncation_depth(truncation: int | None) -> int:
    """``truncation`` as the kernels' rank cutoff: the level itself, or for None the
    largest int64 (every rank counts).

    Raises
    ------
    InputError
        If ``truncation`` is not a positive integer.
    """
    if truncation is None:
        return _NO_TRUNCATION
    return int(check_positive(truncation, name="truncation", integer=True))


# -- public functions --------------------------------------------------------


def idcg(gains, qptr, *, k: int | None = None) -> np.ndarray:
    r"""Ideal DCG of every query, :math:`\sum_{r \le k} g_{(r)} / \log_2(1 + r)`.

    Gains are used as given (pass :math:`2^y - 1` for the exponential gain).
    Returns float64 ``[n_queries]``.
    """
    g = _vec(gains, None, "gains")
    qptr = check_qptr(qptr, g.shape[0])
    return _idcg_kernel(g, qptr, truncation_depth(k))


def delta_ndcg(gains, qptr, i, j, *, scores=None) -> np.ndarray:
    r"""|ΔNDCG| of swapping rows ``i`` and ``j`` (same query) in the current ranking.

    .. math::
        |\Delta \mathrm{NDCG}_{ij}| = |g_i - g_j|\, |D(p_i) - D(p_j)| / \mathrm{IDCG},
        \qquad D(p) = 1 / \log_2(1 + p)

    (Burges (2010), §4). Ranks :math:`p` come from ``scores`` (descending,
    stable); without ``scores`` the rows are taken to be in ranked order.
    """
    g = _vec(gains, None, "gains")
    qptr = check_qptr(qptr, g.shape[0])
    i = np.atleast_1d(np.asarray(i, dtype=np.int64))
    j = np.atleast_1d(np.asarray(j, dtype=np.int64))
    s = (
        -np.arange(g.shape[0], dtype=np.float64)
        if scores is None
        else _vec(scores, g.shape[0], "scores")
    )
    seg = segment_ids(qptr)
    if np.any(seg[i] != seg[j]):
        raise InputError("rows i and j must belong to the same query")
    p = _ranks(s, qptr)
    disc = 1.0 / np.log2(1.0 + p)
    m = idcg(g, qptr)[seg[i]]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.abs(g[i] - g[j]) * np.abs(disc[i] - disc[j]) / m
    return np.where(m > 0, out, 0.0)


@njit(cache=True, parallel=True)
def _lambda_blocks(bounds, scores, gains, qptr, sigma, trunc, normalize, ndcg, max_dcg, disc,
                   doc_w, use_w, forces, weights, last):  # fmt: skip
    """:func:`_lambda_queries` over blocks of queries on numba's threads (blocks write
    disjoint rows, so the result is the serial one, bit for bit)."""
    for b in prange(bounds.shape[0] - 1):
        _lambda_queries(bounds[b], bounds[b + 1], scores, gains, qptr, sigma, trunc, normalize,
                        ndcg, max_dcg, disc, doc_w, use_w, forces, weights, last)  # fmt: skip


def query_blocks(qptr: np.ndarray, trunc: int, n_blocks: int) -> np.ndarray:
    """``n_blocks + 1`` query offsets that split the pair work (about ``n * min(n, trunc)``
    per query of ``n`` documents) into nearly equal blocks."""
    n = np.diff(qptr).astype(np.float64)
    work = np.cumsum(n * np.minimum(n, trunc))
    total = work[-1] if work.size else 0.0
    inner = np.searchsorted(work, total * np.arange(1, n_blocks) / n_blocks, side="right")
    return np.unique(np.concatenate([[0], inner, [n.size]])).astype(np.int64)


def lambdas(
    scores,
    gains,
    qptr,
    *,
    sigma: float = 1.0,
    weighting: str = "ndcg",
    truncation: int | None = None,
    normalize: bool = False,
    doc_weights=None,
    n_threads: int = 1,
) -> Lambdas:
    r"""LambdaRank (or RankNet) forces and Newton weights for all queries.

    For every pair of documents of a query with different gains
    (:math:`g_i > g_j`), with :math:`\rho_{ij} = 1/(1 + e^{\sigma(s_i - s_j)})`:

    .. math::
        \lambda_{ij} = \sigma \rho_{ij} |\Delta Z_{ij}|, \quad
        \lambda_i = \sum_{j: g_i > g_j} \lambda_{ij} - \sum_{j: g_j > g_i} \lambda_{ji},
        \quad w_i = \sum_j \sigma^2 \rho_{ij}(1 - \rho_{ij}) |\Delta Z_{ij}|

    (Burges (2010), §4, §7). ``weighting="ndcg"`` uses
    :math:`|\Delta Z_{ij}| = |g_i - g_j||D(p_i) - D(p_j)|/\mathrm{IDCG}`
    (LambdaRank); ``"none"`` uses 1 (RankNet).

    Parameters
    ----------
    scores : array ``[n_docs]``
        Current model scores; ranks are taken from them (descending, ties by row
        order).
    gains : array ``[n_docs]``
        Non-negative per-document gains: :math:`2^y - 1` for graded labels,
        click counts, IPS gains (:mod:`clickrank.targets`). Pairs with equal
        gains contribute nothing.
    qptr : array ``[n_queries + 1]``
        Query offsets.
    sigma : float
        Steepness :math:`\sigma` of the logistic (LightGBM's ``sigmoid``).
    weighting : {"ndcg", "none"}
        LambdaRank (|ΔNDCG|) or RankNet (unit) pair weights.
    truncation : int, optional
        Only pairs with at least one document in the top ``truncation`` of the
        current ranking, and IDCG at that depth (LightGBM's
        ``lambdarank_truncation_level``). None: all pairs, full IDCG.
    normalize : bool
        LightGBM's ``lambdarank_norm``: divide each pair weight by
        :math:`0.01 + |s_i - s_j|` (unless all scores of the query are equal),
        then scale the query's forces and weights by
        :math:`\log_2(1 + S)/S`, :math:`S = \sum_{\text{pairs}} 2 \lambda_{ij}`.
    doc_weights : array ``[n_docs]``, optional
        Non-negative per-document weights :math:`m_i`; a pair's
        :math:`|\Delta Z_{ij}|` is multiplied by :math:`m_i m_j` (e.g. never-shown
        documents as weak negatives, :func:`clickrank.targets.ips` with
        ``candidates="hybrid"``). None: all 1.
    n_threads : int
        Threads (blocks of queries in parallel, numba); the result does not
        depend on it.

    Returns
    -------
    Lambdas
        ``(forces, weights)``; forces of each query sum to zero.

    Examples
    --------
    >>> gains = 2.0 ** np.array([0, 3, 1, 0, 2, 0]) - 1
    >>> f, w = lambdas([2.5, 2.0, 1.5, 1.0, 0.5, 0.0], gains, [0, 6])
    >>> np.round(f, 3).tolist()
    [-0.383, 0.286, -0.005, -0.052, 0.184, -0.031]
    """
    kernel = _LambdaKernel(gains, qptr, sigma, weighting, truncation, normalize, doc_weights,
                           n_threads)  # fmt: skip
    forces, weights = np.empty(kernel.n), np.empty(kernel.n)
    kernel(_vec(scores, kernel.n, "scores"), forces, weights)
    return Lambdas(forces, weights)


class _LambdaKernel:
    """:func:`lambdas` for fixed gains and queries: checked and prepared once, then called
    once per boosting round with the scores and output buffers."""

    def __init__(self, gains, qptr, sigma, weighting, truncation, normalize, doc_weights,
                 n_threads):  # fmt: skip
        g = _vec(gains, None, "gains")
        if np.any(g < 0):
            raise InputError("gains must be non-negative")
        self.n = n = g.shape[0]
        qptr = check_qptr(qptr, n)
        sigma = float(check_positive(sigma, name="sigma"))
        if weighting not in ("ndcg", "none"):
            raise InputError(f"weighting must be 'ndcg' or 'none', got {weighting!r}")
        max_len = int(np.diff(qptr).max()) if len(qptr) > 1 else 0
        disc = 1.0 / np.log2(2.0 + np.arange(max_len))  # D(p) at 0-based rank p - 1
        use_w = doc_weights is not None
        w = _vec(doc_weights, n, "doc_weights") if use_w else np.empty(0)
        if use_w and np.any(w < 0):
            raise InputError("doc_weights must be non-negative")
        threads = int(check_positive(n_threads, name="n_threads", integer=True))
        trunc = truncation_depth(truncation)
        ndcg = weighting == "ndcg"
        # what does not change between rounds is found once: the IDCGs, the blocks of queries
        max_dcg = _idcg_kernel(g, qptr, trunc) if ndcg else np.empty(0)
        self.nq = nq = len(qptr) - 1
        self.threads = min(threads, numba.config.NUMBA_NUM_THREADS, max(nq, 1))
        # a few blocks per thread; one thread uses no thread pool at all
        self.bounds = query_blocks(qptr, trunc, 4 * self.threads) if self.threads > 1 else None
        self.args = (g, qptr, sigma, trunc, bool(normalize), ndcg, max_dcg, disc, w, use_w)
        # each query's order at the last call, as offsets in the query (a round's sort
        # starts from the previous round's order)
        self.last = np.arange(n, dtype=np.int64) - np.repeat(qptr[:-1], np.diff(qptr))

    def __call__(self, scores: np.ndarray, forces: np.ndarray, weights: np.ndarray) -> None:
        """:func:`_lambda_queries` of all queries at ``scores`` into ``forces``, ``weights``."""
        if self.bounds is None:
            _lambda_queries(0, self.nq, scores, *self.args, forces, weights, self.last)
            return
        with numba_threads(self.threads):
            _lambda_blocks(self.bounds, scores, *self.args, forces, weights, self.last)


def lambda_objective(
    gains,
    qptr,
    *,
    sigma: float = 1.0,
    weighting: str = "ndcg",
    truncation: int | None = None,
    normalize: bool = False,
    doc_weights=None,
    n_threads: int = 1,
):
    """LightGBM's custom objective ``fobj(preds, dataset) -> (grad, hess)`` of :func:`lambdas`.

    The gains and queries are checked once; every round reuses the same
    buffers and returns float32 ``grad = -forces`` and ``hess = weights``,
    which is what LightGBM casts the float64 results to (the same values,
    without its copies and without new pages each round).

    Examples
    --------
    >>> fobj = lambda_objective([0.0, 7.0, 1.0], [0, 3])
    >>> grad, hess = fobj(np.array([2.0, 1.0, 0.0]), None)
    >>> bool(np.allclose(grad, -lambdas([2.0, 1.0, 0.0], [0.0, 7.0, 1.0], [0, 3]).forces))
    True
    """
    kernel = _LambdaKernel(gains, qptr, sigma, weighting, truncation, normalize, doc_weights,
                           n_threads)  # fmt: skip
    forces, weights = np.empty(kernel.n), np.empty(kernel.n)
    grad, hess = np.empty(kernel.n, np.float32), np.empty(kernel.n, np.float32)

    def fobj(preds, _dataset):
        s = np.ascontiguousarray(preds, dtype=np.float64)
        if s.shape != (kernel.n,) or not math.isfinite(float(s.sum())):  # no temporary array
            _vec(s, kernel.n, "scores")  # the precise error
        kernel(s, forces, weights)
        np.negative(forces, out=grad, casting="same_kind")
        hess[:] = weights
        return grad, hess

    return fobj


def _check_pairs(
    pairs, qptr, n: int, pair_weights
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(pairs)
    if p.size == 0:
        p = p.reshape(0, 2)
    if p.ndim != 2 or p.shape[1] != 2 or (p.size and p.dtype.kind not in "iu"):
        raise InputError(f"pairs must be an integer array of shape [n_pairs, 2], got {p.shape}")
    p = p.astype(np.int64)
    if p.size and (p.min() < 0 or p.max() >= n):
        raise InputError(f"pairs hold row indices outside 0..{n - 1}")
    seg = segment_ids(qptr)
    qi, qj = seg[p[:, 0]], seg[p[:, 1]]
    if np.any(qi != qj):
        bad = int(np.flatnonzero(qi != qj)[0])
        raise InputError(f"pair {bad} ({p[bad, 0]}, {p[bad, 1]}) joins rows of different queries")
    w = np.ones(len(p)) if pair_weights is None else _vec(pair_weights, len(p), "pair_weights")
    if np.any(w < 0):
        raise InputError("pair_weights must be non-negative")
    return p[:, 0], p[:, 1], w, qi


def _pair_delta(
    s: np.ndarray,
    qptr: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    c: np.ndarray,
    q: np.ndarray,
    weighting: str,
    gains: np.ndarray | None,
    truncation: int | None,
) -> np.ndarray:
    """Pair weights with truncation and the LambdaRank factor: a step of :func:`pair_lambdas`."""
    n = s.shape[0]
    dz = c.copy()
    need_rank = weighting == "ndcg" or truncation is not None
    if need_rank:
        p = _ranks(s, qptr)
        if truncation is not None:
            t = truncation_depth(truncation)
            dz = np.where(np.minimum(p[i], p[j]) <= t, dz, 0.0)
        if weighting == "ndcg":
            disc = 1.0 / np.log2(1.0 + p)
            dz = dz * np.abs(disc[i] - disc[j])
            if gains is not None:
                g = _vec(gains, n, "gains")
                m = idcg(g, qptr, k=truncation)[q]
                with np.errstate(divide="ignore", invalid="ignore"):
                    dz = np.where(m > 0, dz * np.abs(g[i] - g[j]) / m, 0.0)
    return dz


def pair_lambdas(
    scores,
    pairs,
    qptr,
    *,
    pair_weights=None,
    sigma: float = 1.0,
    weighting: str = "none",
    gains=None,
    truncation: int | None = None,
    normalize: bool = False,
) -> Lambdas:
    r"""Forces and Newton weights of a weighted RankNet loss over explicit preferences.

    Each pair ``(i, j)`` (row indices of one query) states :math:`i \succ j`
    with weight :math:`c_{ij}` (e.g. how often a click on ``i`` skipped ``j``,
    Joachims (2002)). The loss is
    :math:`\sum c_{ij} |\Delta Z_{ij}| \log(1 + e^{-\sigma(s_i - s_j)})`, and
    forces and weights are its negated gradient and its diagonal hessian,
    with the conventions of :func:`lambdas`. Vectorized over pairs.

    Parameters
    ----------
    scores : array ``[n_docs]``
    pairs : int array ``[n_pairs, 2]``
        Global row indices (preferred, other); both rows in the same query.
        Contradicting pairs may both appear; a pair may repeat.
    qptr : array ``[n_queries + 1]``
    pair_weights : array ``[n_pairs]``, optional
        Non-negative weights :math:`c_{ij}` (default 1).
    sigma : float
    weighting : {"none", "ndcg"}
        ``"ndcg"`` multiplies each pair by :math:`|D(p_i) - D(p_j)|` of the
        current ranking, times :math:`|g_i - g_j| / \mathrm{IDCG}` when
        ``gains`` are given (a LambdaRank weighting of preferences).
    gains : array ``[n_docs]``, optional
        Only used by ``weighting="ndcg"``.
    truncation : int, optional
        Keep only pairs with at least one document ranked in the top
        ``truncation`` by the current scores.
    normalize : bool
        LightGBM's ``lambdarank_norm`` applied per query (see :func:`lambdas`).
    """
    s = _vec(scores, None, "scores")
    n = s.shape[0]
    qptr = check_qptr(qptr, n)
    sigma = float(check_positive(sigma, name="sigma"))
    if weighting not in ("ndcg", "none"):
        raise InputError(f"weighting must be 'ndcg' or 'none', got {weighting!r}")
    i, j, c, q = _check_pairs(pairs, qptr, n, pair_weights)
    dz = _pair_delta(s, qptr, i, j, c, q, weighting, gains, truncation)
    ds = s[i] - s[j]
    nq = len(qptr) - 1
    if normalize:
        lens = np.diff(qptr)
        flat = np.zeros(nq, dtype=bool)
        nonempty = lens > 0
        flat[nonempty] = np.maximum.reduceat(s, qptr[:-1][nonempty]) == np.minimum.reduceat(
            s, qptr[:-1][nonempty]
        )
        dz = np.where(flat[q], dz, dz / (0.01 + np.abs(ds)))
    rho = 0.5 * (1.0 - np.tanh(0.5 * sigma * ds))  # 1/(1+exp(sigma ds)), overflow-free
    f = sigma * rho * dz
    h = sigma * sigma * rho * (1.0 - rho) * dz
    if normalize:
        total = np.bincount(q, weights=2.0 * f, minlength=nq)
        factor = np.ones(nq)
        pos = total > 0
        factor[pos] = np.log2(1.0 + total[pos]) / total[pos]
        f = f * factor[q]
        h = h * factor[q]
    forces = np.bincount(i, weights=f, minlength=n) - np.bincount(j, weights=f, minlength=n)
    weights = np.bincount(i, weights=h, minlength=n) + np.bincount(j, weights=h, minlength=n)
    return Lambdas(forces, weights)


def session_lambdas(
    scores,
    rows,
    sptr,
    positions,
    clicks,
    counts=None,
    *,
    t_plus=None,
    t_minus=None,
    sigma: float = 1.0,
    truncation: int | None = None,
    normalize: bool = False,
    cost: str = "ranknet",
) -> SessionLambdas:
    r"""Unbiased LambdaMART forces over logged sessions (Hu et al. (2019)).

    Each session ``u`` is a list of data rows in logged order with 1-based
    positions and clicks, standing for ``counts[u]`` identical logged
    sessions. Within a session, every pair of a clicked row :math:`i` and an
    unclicked row :math:`j` with a row in the current top ``truncation`` (ranks
    :math:`r` by the current scores within the session) has the LambdaRank
    weight of binary click gains and the RankNet cost

    .. math::
        |\Delta Z_{ij}| = \frac{|D(r_i) - D(r_j)|}{\mathrm{IDCG}}, \qquad
        C_{ij} = |\Delta Z_{ij}| \log\bigl(1 + e^{-\sigma (s_i - s_j)}\bigr),

    (with ``normalize``, :math:`|\Delta Z_{ij}|` is divided by
    :math:`0.01 + |s_i - s_j|` as in LightGBM and XGBoost). The pair's force
    and Newton weight are those of :func:`lambdas` divided by the position
    biases of the clicked row's position :math:`k` and the unclicked row's
    position :math:`k'` (0-based, tracked when below ``K = len(t_plus)``):

    .. math::
        \lambda_{ij} = \frac{\sigma \rho_{ij} |\Delta Z_{ij}|}{t^+_k\, t^-_{k'}},
        \qquad
        l^+_k \mathrel{+}= \frac{C_{ij}}{t^-_{k'}}, \qquad
        l^-_{k'} \mathrel{+}= \frac{C_{ij}}{t^+_k}

    (Hu et al. (2019), Eq. 22 and the sums of Eq. 30-31; XGBoost's
    ``lambdarank_unbiased``). With ``normalize`` each session's forces and
    weights are then scaled by :math:`\log_2(1 + S)/S`,
    :math:`S = \sum 2 \lambda_{ij}`, as LightGBM and XGBoost do per query. The
    forces and weights of a session, times its count, are added to its rows;
    the accumulators are summed over all sessions (times their counts).

    .. note:: XGBoost accumulates the cost :math:`\log(1 + e^{s_i - s_j})
       |\Delta Z_{ij}|` (its ``log(1/(1 - sigmoid(s_i - s_j)))``), which grows
       when the clicked document is already ranked above the unclicked one;
       the paper's cost is the RankNet loss above. ``cost="xgboost"`` uses
       XGBoost's, for comparison. XGBoost's hessian is also twice the
       second derivative; here it is the exact one.

    Parameters
    ----------
    scores : array ``[n_rows]``
        Current scores of the data rows.
    rows : int array ``[n]``
        Data row of every session entry.
    sptr : int array ``[n_sessions + 1]``
        Session offsets into the entries.
    positions : int array ``[n]``
        1-based logged positions.
    clicks : bool array ``[n]``
    counts : array ``[n_sessions]``, optional
        Session multiplicities (default 1).
    t_plus, t_minus : array ``[K]``, optional
        Current position biases of clicked and unclicked documents (default
        ones, ``K`` = the largest position). A bias below machine epsilon
        turns the scaling of its pairs off, as in XGBoost.
    sigma : float
    truncation : int, optional
        Only pairs with a row in the current top ``truncation`` of the session.
    normalize : bool
        Score-distance damping and per-session :math:`\log_2(1+S)/S` scaling.
    cost : {"ranknet", "xgboost"}
        Which pair cost feeds ``li`` and ``lj`` (see the note).

    Returns
    -------
    SessionLambdas
        ``(forces, weights, li, lj)``; the forces of every session sum to zero.
    """
    s = _vec(scores, None, "scores")
    step = SessionStep(
        rows, sptr, positions, clicks, counts, n_rows=s.shape[0], sigma=sigma,
        truncation=truncation, normalize=normalize, cost=cost,
    )  # fmt: skip
    return step(s, t_plus, t_minus)


class SessionStep:
    """:func:`session_lambdas` with the sessions checked once, for one call per boosting round.

    ``SessionStep(rows, sptr, positions, clicks, counts, n_rows=..., sigma=...,
    truncation=..., normalize=..., cost=..., n_threads=...)(scores, t_plus, t_minus)`` is
    ``session_lambdas(scores, rows, ..., t_plus=t_plus, t_minus=t_minus, ...)``;
    the arrays are converted and checked, and their plan (:func:`_session_plan`:
    the lists, their (clicked, unclicked) pairs, every session's pairs, the
    pairs of rows; the *row sets*, lists that show the same rows in other orders, and each
    list pair's slot among its set's pairs) built when the step is made; only the scores
    and the biases at each call, whose work is per pair of rows, per row set and per list
    pair, plus one sum and one add per session pair. ``n_threads > 1`` runs the row sets and
    the lists in blocks on numba's threads (blocks of lists that share no row), with the
    bits of one thread.
    """

    def __init__(
        self,
        rows,
        sptr,
        positions,
        clicks,
        counts=None,
        *,
        n_rows: int,
        sigma: float = 1.0,
        truncation: int | None = None,
        normalize: bool = False,
        cost: str = "ranknet",
        n_threads: int = 1,
    ) -> None:
        r = np.ascontiguousarray(rows, dtype=np.int64)
        sp = np.ascontiguousarray(sptr, dtype=np.int64)
        p = np.ascontiguousarray(positions, dtype=np.int64)
        c = np.ascontiguousarray(clicks, dtype=np.bool_)
        if r.ndim != 1 or p.shape != r.shape or c.shape != r.shape:
            raise InputError("rows, positions and clicks must be 1-d arrays of one length")
        if sp.ndim != 1 or sp.size < 1 or sp[0] != 0 or sp[-1] != r.size or np.any(np.diff(sp) < 0):
            raise InputError(
                f"sptr must run from 0 to {r.size} (the number of entries), non-decreasing"
            )
        if r.size and (r.min() < 0 or r.max() >= n_rows):
            raise InputError(f"rows hold indices outside 0..{n_rows - 1}")
        if r.size and p.min() < 1:
            raise InputError("positions are 1-based; found a position < 1")
        n_s = sp.size - 1
        w = np.ones(n_s) if counts is None else _vec(counts, n_s, "counts")
        if np.any(w < 0):
            raise InputError("counts must be non-negative")
        self.sigma = float(check_positive(sigma, name="sigma"))
        if cost not in ("ranknet", "xgboost"):
            raise InputError(f"cost must be 'ranknet' or 'xgboost', got {cost!r}")
        threads = int(check_positive(n_threads, name="n_threads", integer=True))
        longest = int(np.diff(sp).max()) if n_s else 0
        self.n_rows = int(n_rows)
        self.n_positions = int(p.max()) if p.size else 1
        kind, n_clicks = _session_kinds(r, sp, p, c)
        trunc = truncation_depth(truncation)
        self._disc = 1.0 / np.log2(2.0 + np.arange(max(longest, 1)))
        # 1 / IDCG of a session with n clicks (binary gains, the top ``trunc``)
        idcg = np.cumsum(np.where(np.arange(longest) < trunc, self._disc[:longest], 0.0))
        inv_idcg = np.concatenate([[0.0], 1.0 / idcg])
        lists, lp_a, lp_b, lp_key, tw, s_ptr, s_idx = _session_plan(
            r, sp, c, w, kind, n_clicks, inv_idcg, max(self.n_rows, 1)
        )
        keys, lp_q = np.unique(lp_key, return_inverse=True)  # the distinct pairs of rows
        lp_q = lp_q.ravel()
        lo, hi = np.divmod(keys, max(self.n_rows, 1))
        sets, set_of = _row_sets(r, lists)
        set_rows, set_ptr, set_shared, (row_min, row_max) = sets
        cp, sp_q, set_pair_ptr = _session_sets_static(r, lists, lp_a, lp_b, lp_q, set_of,
                                                      set_rows, set_ptr, set_shared)  # fmt: skip
        self._pos, self._lists, self._lp = p, lists, (lp_a, lp_b)
        self._cells: tuple[int, np.ndarray] | None = None  # (K, cells), for the last K
        self._arrays = (r, w, kind, n_clicks, lists, lp_a, lp_b, lp_q, tw, s_ptr, s_idx, lo,
                        hi, inv_idcg, set_of, set_rows, set_ptr, set_pair_ptr, set_shared,
                        sp_q, cp)  # fmt: skip
        self._options = (trunc, bool(normalize), cost == "xgboost")
        # buffers reused every round: the terms per pair of rows, per row set's pair of
        # rows and per list pair, and which row sets have theirs
        self._pair_terms = np.empty((keys.size, 5))
        self._set_terms = np.empty((sp_q.size, 3))
        self._set_state = np.zeros(set_ptr.size - 1, np.int8)
        self._lp_terms = np.empty((lp_a.size, 3))
        self.threads = min(threads, numba.config.NUMBA_NUM_THREADS, max(lists.shape[0], 1))
        self._blocks = None
        if self.threads > 1:
            work = np.diff(lists[:, 2], append=lp_a.size) + s_ptr[lists[:, 4]] - s_ptr[lists[:, 3]]
            n_blocks = 4 * self.threads
            self._blocks = (
                np.unique(np.linspace(0, set_ptr.size - 1, n_blocks + 1).astype(np.int64)),
                _list_blocks(work, row_min, row_max, n_blocks),
                np.empty(lp_a.size),  # each list pair's cost, summed in order after the blocks
            )

    def __call__(self, scores, t_plus=None, t_minus=None) -> SessionLambdas:
        """Forces, weights and bias sums at ``scores`` (see :func:`session_lambdas`)."""
        s = _vec(scores, self.n_rows, "scores")
        tp = np.ones(self.n_positions) if t_plus is None else _vec(t_plus, None, "t_plus")
        tm = np.ones(tp.size) if t_minus is None else _vec(t_minus, tp.size, "t_minus")
        if tp.size == 0 or np.any(tp < 0) or np.any(tm < 0):
            raise InputError("t_plus and t_minus must be non-empty and non-negative")
        if self._cells is None or self._cells[0] != tp.size:
            self._cells = (tp.size, _session_cells(self._pos, self._lists, *self._lp, tp.size))
        forces, weights = np.empty(self.n_rows), np.empty(self.n_rows)
        li, lj = np.empty(tp.size), np.empty(tp.size)
        trunc, normalize, xgb = self._options
        args = (
            s, *self._arrays, self._cells[1], tp, tm, self.sigma, trunc, normalize, xgb,
            self._disc, self._pair_terms, self._lp_terms, self._set_terms, self._set_state,
            forces, weights, li, lj,
        )  # fmt: skip
        if self._blocks is None:
            _session_round(*args)
        else:
            with numba_threads(self.threads):
                _session_round_blocks(*self._blocks, *args)
        return SessionLambdas(forces, weights, li, lj)


def _row_sets(rows: np.ndarray, lists: np.ndarray):
    """The distinct sets of rows the lists show: ``((set_rows, set_ptr, shared, (row_min,
    row_max)), set_of)``, each set's rows ascending in ``set_rows[set_ptr[g]:set_ptr[g+1]]``,
    ``shared`` the sets of two lists or more, each list's smallest and largest row and its
    set ``set_of``."""
    n_l = lists.shape[0]
    if n_l == 0:
        none = np.zeros(0, np.int64)
        return (none, np.zeros(1, np.int64), np.zeros(0, np.bool_), (none, none)), none
    cnt = lists[:, 1]
    width = int(cnt.max())
    offset = np.arange(width)
    inside = offset < cnt[:, None]
    m = np.where(inside, rows[np.where(inside, lists[:, 0, None] + offset, 0)], -1)
    m.sort(axis=1)  # each list's rows ascending, after the padding (-1)
    uniq, set_of = np.unique(m, axis=0, return_inverse=True)
    set_of = set_of.ravel().astype(np.int64)
    set_ptr = np.concatenate([[0], np.cumsum((uniq >= 0).sum(axis=1))]).astype(np.int64)
    shared = np.bincount(set_of, minlength=uniq.shape[0]) >= 2
    row_min, row_max = m[np.arange(n_l), width - cnt], m[:, -1]
    return (uniq[uniq >= 0], set_ptr, shared, (row_min, row_max)), set_of


def _list_blocks(work: np.ndarray, row_min: np.ndarray, row_max: np.ndarray,
                 n_blocks: int) -> np.ndarray:  # fmt: skip
    """About ``n_blocks`` runs of lists of nearly equal ``work``, cut only where no row of
    the lists before the cut is shown after it (so blocks write disjoint rows)."""
    n = work.size
    if n == 0:
        return np.zeros(1, np.int64)
    before = np.maximum.accumulate(row_max)[:-1]  # largest row of lists 0..l-1, for l >= 1
    after = np.minimum.accumulate(row_min[::-1])[::-1][1:]  # smallest of lists l..n-1
    cuts = np.flatnonzero(before < after) + 1
    done = np.concatenate([[0], np.cumsum(work)])
    targets = done[-1] * np.arange(1, n_blocks) / n_blocks
    chosen = (
        cuts[np.minimum(np.searchsorted(done[cuts], targets), cuts.size - 1)] if cuts.size else []
    )
    return np.unique(np.concatenate([[0], chosen, [n]])).astype(np.int64)


def position_bias_update(
    li, lj, *, bias_norm: float = 1.0, block: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Position biases from the accumulated costs (Hu et al. (2019), Eq. 30-31).

    .. math::
        t^+_k = \Bigl(\frac{l^+_k}{l^+_1}\Bigr)^{1/(1+p)}, \qquad
        t^-_k = \Bigl(\frac{l^-_k}{l^-_1}\Bigr)^{1/(1+p)}

    with :math:`p` = ``bias_norm`` (the :math:`L_p` regularisation of the
    biases; XGBoost's ``lambdarank_bias_norm``, default 1, exponent 1/2), and
    :math:`l^\pm` from :func:`session_lambdas`. Biases are relative to
    position 1 (:math:`t^\pm_1 = 1`). Where :math:`l_1 = 0` (no pair at the
    first position) the biases of that side are ones. With ``block`` the positions are
    contexts' blocks of ``block`` ranks (context :math:`c`, rank :math:`k` at
    :math:`cK + k`), each context's biases relative to its own first rank.

    Returns
    -------
    (t_plus, t_minus) : float64 arrays ``[K]``
    """
    bias_norm = float(bias_norm)
    if not np.isfinite(bias_norm) or bias_norm < 0:
        raise InputError(f"bias_norm must be finite and >= 0, got {bias_norm!r}")
    reg = 1.0 / (1.0 + bias_norm)
    out = []
    for acc in (_vec(li, None, "li"), _vec(lj, None, "lj")):  # the two sides
        if block is None:
            out.append((acc / acc[0]) ** reg if acc.size and acc[0] > 0 else np.ones(acc.size))
            continue
        if acc.size % block:
            raise InputError(f"{acc.size} bias sums are not blocks of {block} positions")
        acc = acc.reshape(-1, block)
        first = acc[:, :1]
        ratio = np.divide(acc, first, out=np.ones_like(acc), where=first > 0)
        out.append((ratio**reg).ravel())
    return out[0], out[1]


def ranknet_loss(scores, gains, qptr, *, sigma: float = 1.0) -> np.ndarray:
    r"""RankNet loss of every query, :math:`\sum_{g_i > g_j} \log(1 + e^{-\sigma(s_i - s_j)})`.

    (Burges et al. (2005).) Its gradient is minus the forces of
    :func:`lambdas` with ``weighting="none"``. Returns float64 ``[n_queries]``.

    Examples
    --------
    >>> round(float(ranknet_loss([0.5, 1.0], [1.0, 0.0], [0, 2])[0]), 3)  # misordered
    0.974
    """
    g = _vec(gains, None, "gains")
    s = _vec(scores, g.shape[0], "scores")
    qptr = check_qptr(qptr, g.shape[0])
    out = np.zeros(len(qptr) - 1)
    _ranknet_loss_kernel(s, g, qptr, float(check_positive(sigma, name="sigma")), out)
    return out


def pair_loss(scores, pairs, qptr, *, pair_weights=None, sigma: float = 1.0) -> np.ndarray:
    r"""Weighted RankNet loss over explicit preference pairs, per query.

    :math:`\sum_{(i,j)} c_{ij} \log(1 + e^{-\sigma (s_i - s_j)})`, the loss
    whose negated gradient :func:`pair_lambdas` returns (unweighted by ΔNDCG).
    """
    s = _vec(scores, None, "scores")
    qptr = check_qptr(qptr, s.shape[0])
    i, j, c, q = _check_pairs(pairs, qptr, s.shape[0], pair_weights)
    sigma = float(check_positive(sigma, name="sigma"))
    per_pair = c * np.logaddexp(0.0, -sigma * (s[i] - s[j]))
    return np.bincount(q, weights=per_pair, minlength=len(qptr) - 1)
