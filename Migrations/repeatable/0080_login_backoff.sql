-- Sign-in backoff per (address, account) (issue 20, defect 8). The limits of 0003 locked
-- an email after 5 failures from anywhere and an address after 30 failures on any
-- account, so anyone who knew an email locked its owner out, and one person behind an
-- office or satellite NAT locked out everyone behind it. Now:
--   * each (address, account) pair has `free_failures` failures, then waits 2^k seconds
--     after its last failure (k = failures past the free ones), at most `cap_s`;
--   * an account failing from many addresses (at least `account_max` failures in the
--     window) makes every address that failed on it wait too, by the same rule on the
--     account's count, so a distributed guesser gets no more tries;
--   * an address that has not failed on an account is never refused for it: the right
--     password from elsewhere (the owner) always gets through to the check.
-- Failures are the rows of app.login_failures keyed 'pair:<address>|<email>' and
-- 'email:<email>' (SignIn.swift); a sign-in clears its pair's rows (app.open_login).
create or replace function app.login_backoff(pair_key text, email_key text, free_failures int, account_max int,
                                  cap_s int, window_s int)
returns int
language sql stable security definer set search_path = app, pg_temp as $$
    with pair as (
        select count(*)::int as n, max(at) as last
          from app.login_failures
         where key = pair_key and at > now() - make_interval(secs => window_s)),
    account as (
        select count(*)::int as n, max(at) as last
          from app.login_failures
         where key = email_key and at > now() - make_interval(secs => window_s))
    select greatest(0,
        case when pair.n >= free_failures then
            ceil(extract(epoch from (pair.last - now())) +
                 least(cap_s, power(2, least(pair.n - free_failures, 30))))::int
        else 0 end,
        case when pair.n > 0 and account.n >= account_max then
            ceil(extract(epoch from (account.last - now())) +
                 least(cap_s, power(2, least(account.n - account_max, 30))))::int
        else 0 end)
      from pair, account
$$;
