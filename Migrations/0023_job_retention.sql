-- Finished jobs are forgotten after a week by the runner (failed ones stay for people to
-- look at). The runner's policy on app.jobs already covers deletes.
grant delete on app.jobs to tideway_worker;
