-- Where each run of a reminder or AI task was delivered (a thread id; ''
-- for jobs, system events and runs that delivered nothing), on the receipt
-- and, for the newest fired run, on the task.
ALTER TABLE scheduler_receipts ADD COLUMN delivered_to TEXT NOT NULL DEFAULT '';
ALTER TABLE scheduler_tasks ADD COLUMN delivered_to TEXT NOT NULL DEFAULT '';
-- A reminder without a thread used to be a "system" task (its text handed
-- to the main agent as a system event); now it is a reminder delivered to
-- the conversation the user wrote in most recently, without a model call.
UPDATE scheduler_tasks SET kind = 'reminder' WHERE kind = 'system';
