//! [`Named`]: a model over one of our histories that names the replicas behind the engine's
//! process numbers, so an explanation says `replica-2#1 …`, as the rest of the output does.

use super::Model;

/// `model`, with `names[p]` the name of process `p` (a [`leasesim_history::Process`]'s Display:
/// `replica-1`, `replica-2#1`). Every rule is `model`'s; only [`Model::describe_process`]
/// differs. A process without a name (the final tip reads the extraction adds, numbered
/// `u64::MAX`) is `the checker's final read`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named<M> {
    /// The model the operations are checked against.
    pub model: M,
    /// Process number → replica name.
    pub names: Vec<String>,
}

impl<M> Named<M> {
    /// `model` with no names yet.
    pub fn new(model: M) -> Self {
        Named {
            model,
            names: Vec::new(),
        }
    }
}

impl<M: Model> Model for Named<M> {
    type State = M::State;
    type Input = M::Input;
    type Output = M::Output;
    type Key = M::Key;

    fn init(&self) -> Self::State {
        self.model.init()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State> {
        self.model.step(state, input, output)
    }

    fn key(&self, input: &Self::Input) -> Self::Key {
        self.model.key(input)
    }

    fn is_read_only(&self, input: &Self::Input, output: &Self::Output) -> bool {
        self.model.is_read_only(input, output)
    }

    fn describe_state(&self, state: &Self::State) -> String {
        self.model.describe_state(state)
    }

    fn describe_process(&self, process: u64) -> String {
        match usize::try_from(process)
            .ok()
            .and_then(|p| self.names.get(p))
        {
            Some(name) => name.clone(),
            None if process == u64::MAX => "the checker's final read".to_owned(),
            None => self.model.describe_process(process),
        }
    }

    fn describe_op(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        self.model.describe_op(input, output)
    }

    fn describe_time(&self, time: u64) -> String {
        self.model.describe_time(time)
    }

    fn describe_rejection(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> String {
        self.model.describe_rejection(state, input, output)
    }

    fn describe_possible_states(&self, states: &[&Self::State]) -> String {
        self.model.describe_possible_states(states)
    }
}
