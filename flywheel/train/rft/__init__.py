"""The RFT stage: sample the policy, keep what the verifiers pass, fine-tune on it through the shared stack."""
